// Differential fuzzing of our GPT-2 encoder (util/bpe.h, through tests/bpe_ids) against
// tiktoken's (npm tiktoken, the WASM build of OpenAI's encoder: the reference; the pure-JS
// js-tiktoken is not, it differs from tiktoken on U+0085 and U+FEFF). Random texts mix every
// script, the whitespace kinds (U+0085, U+00A0, U+2028, U+3000, U+FEFF, ...), contractions,
// digits of many scripts, emoji with joiners, astral planes, unassigned and newly assigned
// code points. A mismatch is minimised (delta debugging, down to a text from which no
// single character can be removed) and printed with both id sequences.
//
//   NODE_PATH=.../node_modules node tests/tiktoken_fuzz.js BPE_IDS TOKENIZER.bin [TEXTS [SEED]]
//
// SEED (or $FUZZ_SEED) reproduces a run; by default it is drawn from the clock and printed.
// With $FUZZ_CORPUS set, the texts are also written there, one file, for data/prepare.
// Last line: "N passed, M failed" (texts); exits 1 on any mismatch.
"use strict";
const fs = require("fs");
const { spawnSync } = require("child_process");
const { get_encoding } = require("tiktoken");

const [bpeIds, tokenizer, textsArg, seedArg] = process.argv.slice(2);
const TEXTS = Number(textsArg || 4000);
const SEED = Number(seedArg || process.env.FUZZ_SEED || (Date.now() % 4294967296));
const enc = get_encoding("gpt2");

// ----------------------------------------------------------------------------
// random texts

let state = SEED >>> 0;
function random() {  // mulberry32: a small, seedable generator in [0, 1)
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const below = (n) => Math.floor(random() * n);
const pick = (list) => list[below(list.length)];
const inRange = ([first, last]) => String.fromCodePoint(first + below(last - first + 1));

// [first, last] code points: letters and marks of many scripts, numbers of many kinds, symbols
const SCRIPTS = [
    [0x41, 0x5a], [0x61, 0x7a], [0xc0, 0x24f], [0x370, 0x3ff], [0x400, 0x52f], [0x531, 0x58f],
    [0x591, 0x5f4], [0x600, 0x6ff], [0x700, 0x74f], [0x780, 0x7bf], [0x900, 0x97f], [0x980, 0x9ff],
    [0xa00, 0xa7f], [0xb80, 0xbff], [0xc00, 0xc7f], [0xd00, 0xd7f], [0xe00, 0xe7f], [0xe80, 0xeff],
    [0xf00, 0xfff], [0x1000, 0x109f], [0x10a0, 0x10ff], [0x1100, 0x11ff], [0x1200, 0x137f],
    [0x13a0, 0x13ff], [0x1780, 0x17ff], [0x1800, 0x18af], [0x1c80, 0x1c8f], [0x1e00, 0x1fff],
    [0x2c00, 0x2c5f], [0x3040, 0x30ff], [0x3100, 0x312f], [0x3400, 0x4dbf], [0x4e00, 0x9fff],
    [0xa000, 0xa4cf], [0xa640, 0xa69f], [0xa720, 0xa7ff], [0xac00, 0xd7a3], [0xf900, 0xfaff],
    [0xfb00, 0xfdff], [0xfe70, 0xfeff], [0xff00, 0xffef], [0x10000, 0x100ff], [0x10300, 0x1034f],
    [0x10400, 0x1044f], [0x10d40, 0x10d8f], [0x11f00, 0x11f5f], [0x13000, 0x1342f],
    [0x16100, 0x1613f], [0x16d40, 0x16d7f], [0x1d400, 0x1d7ff], [0x1e900, 0x1e95f],
    [0x20000, 0x2a6df], [0x2b740, 0x2b81f], [0x2ebf0, 0x2ee5f], [0x30000, 0x3134f],
    [0x31350, 0x323af], [0x323b0, 0x3347f],  // CJK Ext. H, and J (Unicode 17.0)
    [0x0300, 0x036f], [0x1ab0, 0x1aff], [0x20d0, 0x20ff], [0xfe00, 0xfe0f], [0xe0100, 0xe01ef],
];
const NUMBERS = [
    [0x30, 0x39], [0xb2, 0xb3], [0xbc, 0xbe], [0x660, 0x669], [0x6f0, 0x6f9], [0x966, 0x96f],
    [0xe50, 0xe59], [0x2070, 0x2079], [0x2150, 0x218b], [0x2460, 0x24ff], [0x3007, 0x3007],
    [0x3021, 0x3029], [0xff10, 0xff19], [0x10107, 0x10133], [0x1d7ce, 0x1d7ff], [0x1f100, 0x1f10c],
];
const SYMBOLS = [
    [0x21, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0x7e], [0xa1, 0xbf], [0x2010, 0x205e],
    [0x20a0, 0x20c1], [0x2190, 0x23ff], [0x2500, 0x27bf], [0x3000, 0x303f], [0xe000, 0xe0ff],
    [0xfff9, 0xfffd], [0x1f000, 0x1faff], [0xe0000, 0xe007f], [0xf0000, 0xf00ff],
];
const SPACES = [" ", " ", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\v", "\f", "\u0085", "\u00a0",
                "\u1680", "\u2000", "\u2007", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f",
                "\u3000", "\ufeff", "\u200b", "\u180e", "\u2060", " \n ", "\u3000\u3000"];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "'", "''",
                      "\u2019s", "\u2019ll", "'x", "'llama", "'dd"];
const WORDS = ["the", "The", " hello", "world", "don", "I", "we", "ROMEO", "naïve", "café", "日本語",
               "Привет", "γειά", "שלום", "مرحبا", "नमस्ते", "안녕", "ไทย", "12345", "3.14", "1,000",
               "x2", "e=mc²", "🙂", "👍🏽", "👨‍👩‍👧", "🇫🇷", "☃️", "...", "!!", "--", "://", "\u00e9",
               "e\u0301", "ﬁ", "Ⅻ", "½", "²", "𝐀𝐁", "𝟘𝟙", "ℌ"];

function anyCodePoint() {  // any plane, assigned or not (a code point new in some version)
    for (;;) {
        const plane = pick([0, 0, 0, 1, 1, 2, 3, 14, 15]);
        const cp = plane * 0x10000 + below(0x10000);
        if (cp < 0xd800 || cp > 0xdfff) return String.fromCodePoint(cp);
    }
}

function fragment() {
    const r = below(100);
    if (r < 25) return inRange(pick(SCRIPTS)).repeat(1 + below(4));
    if (r < 35) return inRange(pick(NUMBERS)).repeat(1 + below(3));
    if (r < 45) return inRange(pick(SYMBOLS));
    if (r < 62) return pick(SPACES);
    if (r < 74) return pick(CONTRACTIONS);
    if (r < 92) return pick(WORDS);
    return anyCodePoint();
}

function randomText() {
    const n = 1 + below(below(2) ? 12 : 60);
    let text = "";
    for (let i = 0; i < n; i++) text += fragment();
    return text;
}

// ----------------------------------------------------------------------------
// both encoders

// our ids of each text (one tests/bpe_ids run for all of them), as strings "1 2 3"
function ours(texts) {
    const input = texts.map((t) => Buffer.from(t, "utf8").toString("hex")).join("\n") + "\n";
    const run = spawnSync(bpeIds, [tokenizer], { input, maxBuffer: 1 << 30 });
    if (run.status !== 0)
        throw new Error(`${bpeIds}: ${String(run.stderr).trim() || "status " + run.status}`);
    return String(run.stdout).split("\n").slice(0, texts.length);
}
const theirs = (text) => Array.from(enc.encode_ordinary(text)).join(" ");

// the texts of a list that the encoders disagree on, as indices
function failing(texts) {
    const mine = ours(texts);
    return texts.map((t, i) => (mine[i] === theirs(t) ? -1 : i)).filter((i) => i >= 0);
}

// delta debugging (Zeller's ddmin) over the text's characters: remove chunks while the
// encoders still disagree, finer and finer, down to single characters; each round's
// candidates are encoded by one tests/bpe_ids run
function minimise(text) {
    let chars = Array.from(text), n = 2;
    while (chars.length > 1) {
        const size = Math.ceil(chars.length / n), candidates = [];
        for (let i = 0; i < chars.length; i += size)
            candidates.push(chars.slice(0, i).concat(chars.slice(i + size)));
        const bad = failing(candidates.map((c) => c.join("")));
        if (bad.length > 0) {
            chars = candidates[bad[0]];
            n = Math.max(n - 1, 2);
        } else if (size === 1) {
            break;
        } else {
            n = Math.min(n * 2, chars.length);
        }
    }
    return chars.join("");
}

const codePoints = (text) => Array.from(text).map((c) => {
    const cp = c.codePointAt(0);
    return cp >= 0x21 && cp <= 0x7e ? c : "U+" + cp.toString(16).toUpperCase().padStart(4, "0");
}).join(" ");

// ----------------------------------------------------------------------------

console.log(`seed ${SEED} (FUZZ_SEED=${SEED} reproduces this run), ${TEXTS} texts`);
const texts = [];
for (let i = 0; i < TEXTS; i++) texts.push(randomText());
if (process.env.FUZZ_CORPUS)  // the texts as one file, for data/prepare (tests/tiktoken_fuzz.sh)
    fs.writeFileSync(process.env.FUZZ_CORPUS, texts.join("\n\n"));
const bad = failing(texts);
let bytes = 0;
for (const t of texts) bytes += Buffer.byteLength(t, "utf8");
const seen = new Set();
for (const i of bad.slice(0, 5)) {
    const small = minimise(texts[i]);
    if (seen.has(small)) continue;
    seen.add(small);
    console.log(`FAIL text ${i} (${Buffer.byteLength(texts[i], "utf8")} bytes), minimised to ` +
                `${JSON.stringify(small)} = [${codePoints(small)}]:\n` +
                `    ours     ${ours([small])[0]}\n    tiktoken ${theirs(small)}`);
}
enc.free();
console.log(`${texts.length - bad.length} of ${texts.length} random texts (${(bytes / 1e6).toFixed(2)} MB) ` +
            `give tiktoken's ids` + (bad.length > 5 ? `; the first 5 mismatches shown` : ""));
console.log(`${texts.length - bad.length} passed, ${bad.length} failed`);
process.exit(bad.length ? 1 : 0);
