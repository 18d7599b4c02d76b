// Writes data/ref/gpt2_bpe_cases.txt: GPT-2 token ids of every line of tests/bpe_stress.txt
// (and of the whole file), as tiktoken encodes them; and data/ref/gpt2_unicode_cases.txt: the
// ids of code points at the edge of tiktoken's Unicode version (16.0, util/unicode_tables.h),
// each in three contexts where its class decides the pieces. tiktoken is the oracle (npm
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

// "text <hex>" and "ids ..." lines of each text, into FILE
function writeCases(file, texts) {
    let out = "";
    for (const text of texts) {
        const ids = Array.from(enc.encode_ordinary(text));
        out += "text " + Buffer.from(text, "utf8").toString("hex") + "\n";
        out += "ids " + ids.join(" ") + "\n";
    }
    fs.writeFileSync(file, out);
    console.log(`${file}: ${texts.length} cases from tiktoken's gpt2 encoding`);
}

const whole = fs.readFileSync("tests/bpe_stress.txt", "utf8");
const texts = whole.split("\n").filter((line) => line.length > 0).concat([whole]);
writeCases("data/ref/gpt2_bpe_cases.txt", texts);

// letters and numbers new in Unicode 17.0 (symbols for tiktoken: CJK Ext. J, Ext. C and E
// additions, Latin, Telugu, Kannada, Sidetic, Tolong Siki letters and digits, Beria Erfe,
// Tai Yo), and letters new in 16.0 and 15.1 (letters for tiktoken)
const edge = [0x331c4, 0x323b0, 0x2b73a, 0x2cea2, 0x088f, 0x0c5c, 0x0cdc, 0xa7ce, 0x10940, 0x11db0,
              0x11de0, 0x16ea0, 0x16ff4, 0x1e6c0,                       // new in 17.0
              0x1c89, 0xa7cb, 0x13460, 0x1e5d0, 0x11bc0, 0x2ebf0];       // new in 16.0, 15.1
const contexts = [(c) => c + "'ll", (c) => " " + c + "'s", (c) => "a" + c + "1'd"];
writeCases("data/ref/gpt2_unicode_cases.txt",
           edge.flatMap((cp) => contexts.map((context) => context(String.fromCodePoint(cp)))));
enc.free();
