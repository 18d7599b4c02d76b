// Writes data/ref/gpt2_bpe_cases.txt: GPT-2 token ids of every line of tests/bpe_stress.txt
// (and of the whole file), as tiktoken encodes them. tiktoken is the oracle (npm
// package, the WASM build of OpenAI's tiktoken); it is not part of this project.
//
//   npm install --prefix /tmp/tk tiktoken@1.0.22
//   NODE_PATH=/tmp/tk/node_modules node tests/make_bpe_cases.js
//
// Format, one case per two lines: "text <hex of the UTF-8 bytes>", then "ids <id> <id> ...".
"use strict";
const fs = require("fs");
const { get_encoding } = require("tiktoken");
const enc = get_encoding("gpt2");
const whole = fs.readFileSync("tests/bpe_stress.txt", "utf8");
const texts = whole.split("\n").filter((line) => line.length > 0).concat([whole]);
let out = "";
for (const text of texts) {
    const ids = Array.from(enc.encode_ordinary(text));
    out += "text " + Buffer.from(text, "utf8").toString("hex") + "\n";
    out += "ids " + ids.join(" ") + "\n";
}
enc.free();
fs.writeFileSync("data/ref/gpt2_bpe_cases.txt", out);
console.log(`data/ref/gpt2_bpe_cases.txt: ${texts.length} cases from tiktoken's gpt2 encoding`);
