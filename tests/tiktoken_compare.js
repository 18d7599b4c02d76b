// The oracle check of our GPT-2 encoder: the tokens data/prepare wrote for TEXT (its train
// file, then its validation file, which together are the whole text) must equal tiktoken's
// GPT-2 encoding of TEXT, token for token, and the tokens' bytes (from TOKENIZER) must give
// TEXT back byte for byte. tiktoken is the npm package (the WASM build of OpenAI's
// tiktoken), installed by .ci/run; it is the oracle, not part of this project.
//
//   NODE_PATH=.../node_modules node tests/tiktoken_compare.js TEXT TRAIN.bin VAL.bin TOKENIZER.bin
//
// Prints one line "PASS ..." or "FAIL ..." and exits 0 or 1.
"use strict";
const fs = require("fs");
const [textPath, trainPath, valPath, tokPath] = process.argv.slice(2);
const { get_encoding } = require("tiktoken");

function readTokens(path) {  // llm.c token file: 256 int32 header (magic 20240520), uint16 tokens
    const b = fs.readFileSync(path);
    if (b.readInt32LE(0) !== 20240520) throw new Error(`${path}: not a token file`);
    const n = b.readInt32LE(8);
    const ids = new Array(n);
    for (let i = 0; i < n; i++) ids[i] = b.readUInt16LE(1024 + 2 * i);
    return ids;
}
function readTokenizer(path) {  // llm.c tokenizer: header, then a uint8 length and the bytes per token
    const b = fs.readFileSync(path);
    const V = b.readInt32LE(8), table = [];
    for (let i = 0, p = 1024; i < V; i++) {
        table.push(b.subarray(p + 1, p + 1 + b[p]));
        p += 1 + b[p];
    }
    return table;
}

const text = fs.readFileSync(textPath);
const enc = get_encoding("gpt2");
const t0 = process.hrtime.bigint();
const expected = Array.from(enc.encode_ordinary(text.toString("utf8")));
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
enc.free();
const ours = readTokens(trainPath).concat(readTokens(valPath));
let first = -1;
for (let i = 0; i < Math.max(ours.length, expected.length); i++)
    if (ours[i] !== expected[i]) { first = i; break; }
const table = readTokenizer(tokPath);
const decoded = Buffer.concat(ours.map((id) => table[id] || Buffer.alloc(0)));
const roundTrip = decoded.equals(text);
const mbs = (text.length / 1e6 / seconds).toFixed(2);
if (first < 0 && roundTrip) {
    console.log(`PASS ${textPath}: ${ours.length} tokens equal tiktoken's, and decode gives the ${text.length} ` +
                `bytes back (tiktoken: ${mbs} MB/s)`);
} else {
    const where = first < 0 ? "" : ` first difference at token ${first}: ours ${ours.slice(first, first + 5)}` +
                                  ` tiktoken ${expected.slice(first, first + 5)}`;
    console.log(`FAIL ${textPath}: ${ours.length} tokens vs tiktoken's ${expected.length};${where}` +
                `${roundTrip ? "" : "; decode does not give the text back"}`);
    process.exit(1);
}
