// Every code point whose class (\p{L}, \p{N}, \s or none) in util/unicode_tables.h (the
// Unicode version of tiktoken's regex engine) differs from node's own Unicode tables (a
// newer version): our GPT-2 ids (tests/bpe_ids) must equal tiktoken's in contexts where the
// class decides the pieces (before `'ll`, after a letter or a digit, after a space, ...).
// Also prints how many of them tiktoken treats as a letter or number, probed with `'ll`:
// "X'll" is X + `'ll` (ids ... 1183) when X is \p{L} or \p{N}, and X' + `ll` (... 297) when
// X is a symbol, so the apostrophe joins it.
//
//   NODE_PATH=.../node_modules node tests/tiktoken_unicode.js BPE_IDS TOKENIZER.bin
//
// Last line: "N passed, M failed" (code points whose contexts all agree, or not).
"use strict";
const fs = require("fs");
const { spawnSync } = require("child_process");
const { get_encoding } = require("tiktoken");
const [bpeIds, tokenizer] = process.argv.slice(2);

// util/unicode_tables.h's classes: name -> sorted [first, last] ranges; and its version line
const header = fs.readFileSync("util/unicode_tables.h", "utf8");
const version = (header.match(/from the Unicode\s*\n?\/\/\s*([0-9.]+)/) || [])[1] || "?";
const tables = {};
for (const m of header.matchAll(/static const uint32_t (\w+)\[\]\[2\] = \{([^}]*(?:\}[^;]*?)*)\};/g))
    tables[m[1]] = Array.from(m[2].matchAll(/\{0x([0-9A-F]+), 0x([0-9A-F]+)\}/g),
                              (r) => [parseInt(r[1], 16), parseInt(r[2], 16)]);
const within = (ranges, cp) => {
    let lo = 0, hi = ranges.length - 1;
    while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (cp < ranges[mid][0]) hi = mid - 1;
        else if (cp > ranges[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
};
const ourClass = (cp) => within(tables.UNICODE_LETTER, cp) ? "L" : within(tables.UNICODE_NUMBER, cp) ? "N"
                       : within(tables.UNICODE_SPACE, cp) ? "S" : "-";
const nodeClass = (c) => /\p{L}/u.test(c) ? "L" : /\p{N}/u.test(c) ? "N"
                       : /\p{White_Space}/u.test(c) ? "S" : "-";

const differing = [];
for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (ourClass(cp) !== nodeClass(c)) differing.push(cp);
}
const byChange = {};
for (const cp of differing) {
    const key = `${ourClass(cp)}->${nodeClass(String.fromCodePoint(cp))}`;
    byChange[key] = (byChange[key] || 0) + 1;
}
console.log(`${differing.length} code points have another class in util/unicode_tables.h ` +
            `(Unicode ${version}) ` +
            `than in node ${process.version}'s Unicode ${process.versions.unicode} ` +
            `(ours->node's: ${JSON.stringify(byChange)})`);

const CONTEXTS = [(c) => c + "'ll", (c) => " " + c + "'s", (c) => "a" + c + "'t", (c) => "1" + c + "2",
                  (c) => c + c + " x", (c) => "\u3000" + c + "!", (c) => "x " + c + "\n\n" + c];
const texts = [];
for (const cp of differing)
    for (const context of CONTEXTS) texts.push(context(String.fromCodePoint(cp)));
const input = texts.map((t) => Buffer.from(t, "utf8").toString("hex")).join("\n") + "\n";
const run = spawnSync(bpeIds, [tokenizer], { input, maxBuffer: 1 << 30 });
if (run.status !== 0) {
    console.log(`FAIL ${bpeIds}: ${String(run.stderr).trim()}`);
    console.log("0 passed, 1 failed");
    process.exit(1);
}
const mine = String(run.stdout).split("\n");
const enc = get_encoding("gpt2");
let pass = 0, fail = 0, tiktokenLetters = 0;
for (let i = 0; i < differing.length; i++) {
    const c = String.fromCodePoint(differing[i]);
    const ll = Array.from(enc.encode_ordinary(c + "'ll"));
    if (ll[ll.length - 1] === 1183) tiktokenLetters++;
    let bad = null;
    for (let k = 0; k < CONTEXTS.length && !bad; k++) {
        const t = texts[i * CONTEXTS.length + k], theirs = Array.from(enc.encode_ordinary(t)).join(" ");
        if (mine[i * CONTEXTS.length + k] !== theirs)
            bad = `${JSON.stringify(t)}: ours ${mine[i * CONTEXTS.length + k]}, tiktoken ${theirs}`;
    }
    if (!bad) pass++;
    else if (++fail <= 10) console.log(`FAIL U+${differing[i].toString(16).toUpperCase()} ${bad}`);
}
enc.free();
console.log(`tiktoken treats ${tiktokenLetters} of them as \\p{L} or \\p{N} before 'll; our ids equal ` +
            `tiktoken's in all ${CONTEXTS.length} contexts for ${pass} of ${differing.length}`);
console.log(`${pass} passed, ${fail} failed`);
process.exit(fail ? 1 : 0);
