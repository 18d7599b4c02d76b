#!/usr/bin/env python3
"""tests/doc_check.py: every code quote and name in doc/*.md and README.md checked against
the source; and README.md a first page that lost none of the manual it held.

A learner reads doc/*.md beside the code and matches what is quoted line by line, so a
quote that no longer matches is a bug. Run from anywhere (make test runs it from
tests/run_tests.sh): `python3 tests/doc_check.py [FILE.md ...]` (default doc/*.md) prints
one line per stale quote, `doc/FILE.md:LINE: what is wrong`, then
`doc check: N quotes, M stale`, and exits 1 when M > 0. Python 3 alone, no packages.
Without arguments it also checks README.md: at most 250 lines, `attention_forward` within
its first 50, the sequel the last step of its reading order, and every section of the
README before issue 36 on the page README_MOVED names, with the facts listed there.

The sources: the repository's .c .h .sh .py .js files, the Makefile and .ci/run (not doc/).
A quote is an inline `code span`, a line of a fenced block, or one of the forms below.
- names: a quote that is one name (`gpt2_forward`, `a.att_probs`, `model->dropout_step`,
  `foo()`, `POS_*`) names identifiers that exist in the sources;
- code: any other quote appears in the sources, whitespace normalised, `...` standing for
  any text within one statement; and in the code the text around it names: in the body
  (with the comments just above it and its file section's header comment) of one of the
  functions or structs named in the same table row, else in the same paragraph or
  section; with none named, anywhere. So a step label in a row beside `attention_forward`
  must be in attention_forward. `dropout_mask(p, seed, ...)`: the function's parameters;
- "`G` in `F`": G is in the body of the function F;
- maths in prose that compares code variables (`t2 ≤ t`: a name with a digit or an
  underscore on the left) is the quote `t2 <= t`;
- claims: a clause whose subject is a function, "`F` calls/hands/applies/runs/uses/keeps/
  passes X", or "each/they call X" after a sentence naming functions: every function and
  every tensor (a field of ParameterTensors, ActivationTensors, BackwardScratch) named in
  X is used in the body of F (or of one of them);
- tests: "`test_errata` E14" means test_errata (or a function it calls) prints E14; a check
  quoted by name ("finite differences layernorm dinp") is one the tests print (format
  strings read with any value for %d, %s); the table of tests "in the order in which
  test_gpt2 runs them" lists every test of CHECK_GROUPS, in its order;
- files, flags, commands: a quoted path exists (or is built, or named by the sources); a
  flag (`-pe rope`) is one the sources spell as a string ("-pe"); `./PROGRAM -x` or
  `data/PROGRAM` names a program the Makefile builds and flags it knows, `make T` a target;
- fenced blocks: command lines as above; in maths and diagrams, a called name with an
  underscore (`stream_backward(`) and a field access (`s->dsum`) exist;
- steps: every function of train_gpt2.c or test_gpt2.c that carries the article's step
  labels (`// step 3 (`) is named in doc/README.md's table of article 000's steps;
- the first loss: "the first loss, X" is the loss of step 1 in README.md's transcript of
  the default run;
- line counts: a count of lines said of a file ("`util/dist.h` (508 lines", "`train_gpt2.c`
  is a ~2,050-line") is its count now, within 5%.
Not code, and not checked: maths (a quote with ·, ⊙, Σ, ≤, −, ×, √, ` -> ` or a power such
as W^T or 2^24), indented blocks (maths), program output after an `<!-- ... -->` line, the
articles' own code (ARTICLE_NAMES) and the few quotes in ALLOWED, each with its reason.
"""
import glob
import os
import re
import subprocess
import sys

# quotes that are deliberately not the program's code; keep this list short
ALLOWED = {
    "\\r\\n": "formats.md: names the bytes CR LF of a line ending, not a quote of code",
    "vfmadd": "precision.md: the x86 instruction the compiler emits, not a name in the sources",
    '"NAME": {"dtype": D, "shape": [..], "data_offsets": [BEGIN, END]}': "formats.md: the JSON of a "
        "safetensors header, a file format",
    '"__metadata__": {string: string}': "formats.md: the same JSON header",
    "train_gpt2.py": "formats.md: llm.c's files, which this repository reads but does not hold",
    "gpt2_124M.bin": "formats.md: llm.c's files",
    "gpt2_124M_debug_state.bin": "formats.md: llm.c's files",
    "dev/download_starter_pack.sh": "usage.md: llm.c's files",
    "dev/data/fineweb.py": "usage.md: llm.c's files",
    "dev/data/tinyshakespeare.py": "gpt2_124m.md: llm.c's files",
}
# the articles' own code (PyTorch, LLaMA-style), quoted where the docs map it onto ours; the
# articles are not in the repository, so these names cannot be checked against them
ARTICLE_NAMES = {"ModelArgs", "n_kv_heads", "n_heads", "n_rep", "head_dim", "wq", "wk", "wv", "wo",
                 "cache_k", "cache_v", "create_mask", "reshape_for_heads", "precompute_freqs_cis",
                 "apply_rotary_emb", "in_proj_weight", "repeat_kv", "start_pos", "norm_first",
                 "batch_first", "multihead_attn", "nn", "F", "dim", "max_seq_len", "mem", "x",
                 "TransformerEncoderLayer", "dim_feedforward", "out_proj", "model_parallel_size",
                 "n_local_heads", "n_local_kv_heads", "xq"}
# English words that are also fields of the activation structs: not taken as names in prose
PROSE_WORDS = {"logits", "probs", "losses", "encoded", "weight", "bias"}

# README.md is a first page; the manual it held until issue 36 lives in doc/. Where each of
# its sections went (page, heading there) and facts of each that must stay on that page
# (whitespace normalised): a section or a fact that vanishes fails the check.
README_MOVED = [
    ("Your machine, another compiler", "doc/usage.md", "Building",
     ["Homebrew's", "MSYS2's MinGW-w64", "`make ARCH=` builds a binary that runs on any"]),
    ("How to read this code", "README.md", "How to read this code",
     ["`attention_forward` and `attention_backward`", "`gpt2_train_step`", "`train_seq2seq.c`"]),
    ("The default run", "README.md", "The default run", ["1.8741", "step     1/2000 | loss 4.214767"]),
    ("The default run (noise, time, pictures)", "doc/usage.md", "The default run",
     ["`-sd 42` end at 1.905", "16.3-17.3 ms per", "coloured by its square root", "980 px"]),
    ("Command line", "doc/usage.md", "Command line",
     ["<!-- flags:", "Gradient accumulation", "23 losses agree to 3e-7", "ETA"]),
    ("llm.c's flags here", "doc/usage.md", "llm.c's flags here", ["HellaSwag", "ZeRO stage", "**here the prompt**"]),
    ("Files and formats", "doc/data.md", "Files and formats",
     ["magic 20241124", "never half of one", "Conv1D weights", "NH =\nC/64"]),
    ("From another directory, and what a message looks like", "doc/usage.md",
     "From another directory, and what a message looks like",
     ["`/proc/self/exe`", "Exit status 2 for usage errors, 1 otherwise", "-y 1` with another `-x`"]),
    ("Bad input", "doc/usage.md", "Bad input", ["`ulimit -f`", "4,096", "under 0.1 s", "-e /tmp"]),
    ("Generation and the KV cache", "doc/generation.md", "Generation and the KV cache",
     ["2 x L x maxT x C", "max\ndifference 2e-6"]),
    ("Generation from bf16 weights", "doc/generation.md", "Generation from bf16 weights (`-prec bf16`)",
     ["**1.71x**", "249 MB", "_mm_prefetch"]),
    ("Several processes or machines (MPI)", "doc/mpi.md", "Several processes or machines (MPI)",
     ["DIST_BUCKET_BYTES", "2.9e-7 relative", "--allow-run-as-root", "62 Gbit/s", "1.16, 1.09 s/step"]),
    ("Train on your own text", "doc/data.md", "Train on your own text",
     ["tiktoken@1.0.22", "4,657 code points", "**4.80**", "762"]),
    ("GPT-2 124M", "doc/gpt2_124m.md", "GPT-2 124M", ["5.252026", "openai-community/gpt2", "byte for byte"]),
    ("Dropout", "doc/dropout.md", "Dropout", ["four sites", "never drop"]),
    ("Dropout experiment", "doc/dropout.md", "Dropout experiment", ["**1.904**", "**2.101**", "1.827"]),
    ("Block variants (articles 003 and 004)", "doc/variants.md", "Block variants (articles 003 and 004)",
     ["**1.8048**", "7.1080", "73,728", "57.6 tokens/s"]),
    ("Encoder-decoder (article 003)", "doc/seq2seq.md", "Encoder-decoder (article 003)",
     ["0.243M parameters", "L1H2 0.95", "29 mutants", "16% exact match"]),
    ("Tests", "doc/tests.md", "Tests",
     ["the last line is `N passed, M failed`", "32 of 32", "542 texts", "400 MB memory limit"]),
    ("Test tolerances, from measured errors", "doc/tests.md", "Test tolerances, from measured errors",
     ["7.2e-7", "fcprojb 3.1e-7", "1.19e-7"]),
    ("Speed", "doc/speed.md", "Speed", ["**635**", "**65.7%**", "**0.33**", "**1.69x**"]),
    ("The optimizer in one pass, and bf16 weights kept once per step", "doc/speed.md",
     "The optimizer in one pass, and bf16 weights kept once per step",
     ["step 161", "1.8769", "33 times for the 124M LM head"]),
    ("Layout", "README.md", "Layout", ["`fast/`", "`util/`", "`.ci/run`", "| floor |"]),
]
README_MAX_LINES = 250

MATHS = re.compile(r"[·⊙Σ√≤≥−×]|\^[A-Z0-9(]|\bsoftmax\(| -> ")
IDENT = re.compile(r"[A-Za-z_]\w*")
NAME_QUOTE = re.compile(r"^\.?[A-Za-z_][\w]*\*?(\s*(\.|->)\s*[A-Za-z_]\w*)*(\[[^\]]*\])?(\(\))?$")
SIGNATURE = re.compile(r"^([A-Za-z_]\w*)\(([\w\s,]*)\)$")
FLAG = re.compile(r"^(-{1,2}[a-z][a-z0-9]*)(\s.*)?$")
PATHLIKE = re.compile(r"^[\w.*{},%-]*(/[\w.*{},%-]+)+/?$|^[\w.-]+/$|^[\w*{},-]+\.(c|h|md|py|sh|js|bin|txt|tsv|svg|json)$")
COMMAND = re.compile(r"^(\./\S+|data/\w+|make|mpirun|grep|git|bash|node|python3)(\s|$)")
PROSE_CMP = re.compile(r"\b([A-Za-z_]\w*\d\w*|[A-Za-z]\w*_\w+)\s*(≤|≥|<=|>=)\s*([A-Za-z_]\w*|\d+)\b")
CLAIM_VERBS = r"(calls|hands|applies|runs|uses|keeps|passes|call|run|use)"
STEP_LABEL = re.compile(r"//\s*step \d \(")


def strip_ws(s):
    """whitespace normalised: none next to punctuation, one space between two words"""
    return re.sub(r" (?=\W)|(?<=\W) ", "", re.sub(r"\s+", " ", s)).strip()


def load_sources():
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):   # not a git checkout: every file
        out = [os.path.relpath(os.path.join(d, f)) for d, dirs, fs in os.walk(".") for f in fs
               if not re.match(r"\./(\.git|out|tests/tmp|node_modules)(/|$)", d + "/")]
    files = [f for f in out if f and not f.startswith("doc/") and f != "tests/doc_check.py" and os.path.isfile(f)
             and (f.endswith((".c", ".h", ".sh", ".py", ".js")) or f in ("Makefile", ".ci/run"))]
    texts = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            texts[f] = fh.read()
    return texts


def comment_above(lines, i):
    """the comment lines directly above line i, and the header comment of i's file section
    (the comment after the last `// ----` bar above it)"""
    k = i
    while k > 0 and lines[k - 1].lstrip().startswith("//"):
        k -= 1
    above = lines[k:i]
    bar = max((j for j in range(i) if lines[j].startswith("// ----")), default=None)
    header = []
    if bar is not None:
        j = bar + 1
        while j < i and lines[j].startswith("//"):
            header.append(lines[j])
            j += 1
    return "\n".join(header + above) + "\n"


def function_bodies(texts):
    """name -> list of (file, text) of C functions and structs: the comment above, the
    section's header comment, the signature and the body"""
    bodies = {}
    struct = re.compile(r"^typedef struct \w*\s*\{")
    start = re.compile(r"^(?!typedef|return|else|if|for|while|do|#|//|/\*|\s)"
                       r"[\w\s\*]*?\b([A-Za-z_]\w*)\s*\(")
    for f, text in texts.items():
        if not f.endswith((".c", ".h")):
            continue
        # block comments blanked (their lines kept), so that prose is not read as code
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            if struct.match(lines[i]):
                k = i
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                m = re.match(r"^\}\s*(\w+);", lines[k]) if k < len(lines) else None
                if m:
                    bodies.setdefault(m.group(1), []).append(
                        (f, comment_above(lines, i) + "\n".join(lines[i:k + 1])))
                i = k + 1
                continue
            m = start.match(lines[i])
            if not m:
                i += 1
                continue
            # the signature runs to the first "{" or ";"
            j, sig = i, ""
            while j < len(lines) and "{" not in lines[j] and ";" not in lines[j]:
                sig += lines[j] + "\n"
                j += 1
            if j >= len(lines) or ("{" not in lines[j]) or (";" in lines[j].split("{")[0]):
                i += 1
                continue
            depth, k, body = 0, j, []
            while k < len(lines):
                line = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|//.*', "", lines[k])
                depth += line.count("{") - line.count("}")
                body.append(lines[k])
                if depth <= 0 and "}" in line:
                    break
                k += 1
            bodies.setdefault(m.group(1), []).append((f, comment_above(lines, i) + sig + "\n".join(body)))
            i = k + 1
    return bodies


def struct_fields(text, name):
    m = re.search(r"typedef struct \{(.*?)\}\s*" + name + ";", text, re.S)
    if not m:
        return set()
    decl = re.sub(r"//[^\n]*", "", m.group(1))
    return set(re.findall(r"\*\s*(\w+)\s*[;,]", decl)) | set(re.findall(r",\s*\*?\s*(\w+)\s*[;,]", decl))


class Doc:
    """a markdown file cut into units: table rows and paragraphs, in sections"""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as fh:
            self.lines = fh.read().split("\n")

    def units(self):
        """yields (kind, first line number, text, section index); kind: row, para, fence"""
        section, para, para_start, fence, fence_start, marker = 0, [], 0, None, 0, False
        for n, line in enumerate(self.lines, 1):
            if fence is not None:
                if line.startswith("```"):
                    yield ("fence", fence_start, "\n".join(fence), section, marker)
                    fence, marker = None, False
                else:
                    fence.append(line)
                continue
            if line.startswith("```"):
                if para:
                    yield ("para", para_start, "\n".join(para), section, False)
                    para = []
                fence, fence_start = [], n + 1
                continue
            if line.startswith("<!--"):
                marker = True
                continue
            if line.startswith("#"):
                if para:
                    yield ("para", para_start, "\n".join(para), section, False)
                    para = []
                section += 1
                yield ("heading", n, line, section, False)
                continue
            if line.startswith("|"):
                if para:
                    yield ("para", para_start, "\n".join(para), section, False)
                    para = []
                yield ("row", n, line, section, False)
                continue
            if line.startswith("    ") and not para:   # an indented block: maths, not quotes
                continue
            if not line.strip():
                if para:
                    yield ("para", para_start, "\n".join(para), section, False)
                    para = []
                marker = marker and False
                continue
            if not para:
                para_start = n
            para.append(line)
        if para:
            yield ("para", para_start, "\n".join(para), section, False)


class Checker:
    def __init__(self):
        self.texts = load_sources()
        self.stripped = {f: strip_ws(t) for f, t in self.texts.items()}
        self.words = set()
        for t in self.texts.values():
            self.words.update(IDENT.findall(t))
        self.bodies = function_bodies(self.texts)
        # tables of functions: NAME[] = { ... };
        self.tables = {m.group(1): m.group(2) for t in self.texts.values()
                       for m in re.finditer(r"\b([A-Z][A-Z0-9_]+)\[\]\s*=\s*\{(.*?)\};", t, re.S)}
        self.stripped_bodies = {n: [strip_ws(b) for _, b in v] for n, v in self.bodies.items()}
        main = self.texts.get("train_gpt2.c", "")
        self.tensors = set()
        for s in ("ParameterTensors", "ActivationTensors", "BackwardScratch"):
            self.tensors |= struct_fields(main, s)
        self.flags = set(re.findall(r'"(-{1,2}[a-z][a-z0-9]*)"', "\n".join(self.texts.values())))
        mk = self.texts.get("Makefile", "")
        # a target's name without $(EXE) (train_gpt2$(EXE): is the target train_gpt2)
        self.targets = set(re.findall(r"^([\w./-]+)(?:\$\(EXE\))?\s*:", mk, re.M)) | set(
            re.findall(r"^\.PHONY:(.*)$", mk, re.M)[0].split() if ".PHONY" in mk else [])
        self.programs = {t for t in self.targets if "/" in t or t in ("train_gpt2", "test_gpt2",
                                                                         "train_seq2seq", "test_seq2seq")}
        self.formats = []
        for lit in set(re.findall(r'"((?:\\.|[^"\\\n])*%[^"\n]*)"', "\n".join(self.texts.values()))):
            parts = re.split(r"%[-+ #0-9.*]*(?:l|ll|z)?[a-zA-Z]", strip_ws(lit.replace("\\n", "")))
            if len(parts) > 1 and sum(map(len, parts)) >= 8:
                self.formats.append((sum(map(len, parts)),
                                     re.compile(".{1,40}?".join(re.escape(p) for p in parts))))
        self.test_strings_raw = "\n".join(t for f, t in self.texts.items()
                                           if f.startswith("test") or f.startswith("tests/"))
        self.test_strings = strip_ws("\n".join(
            "\n".join(re.findall(r'"((?:\\.|[^"\\\n])*)"', t)) for f, t in self.texts.items()
            if f.startswith("test") or f.startswith("tests/")))
        # the tests' format strings, every conversion written %d (numbers) or %s (text)
        self.test_formats = [re.sub(r"%[-+ #0-9.*]*(?:l|ll|z)?[diufeEgGx]", "%d",
                                    re.sub(r"%[-+ #0-9.*]*s", "%s", strip_ws(lit)))
                             for lit in re.findall(r'"((?:\\.|[^"\\\n])*%[^"\n]*)"', self.test_strings_raw)]
        self.quotes = 0
        self.stale = []

    # ---- helpers
    def bad(self, doc, line, msg):
        self.stale.append(f"{doc}:{line}: {msg}")

    def functions_in(self, text):
        """the functions and structs a text names: `name`, `name()`, `name(args)`"""
        return [n for n in re.findall(r"`([A-Za-z_]\w*)(?:`|\()", text) if n in self.bodies]

    def found(self, fragment, scope, scripts=True):
        """fragment (whitespace removed, '...' a gap) in the bodies of scope, or anywhere"""
        pieces = [re.escape(p) for p in re.split(r"\.\.\.+|…", strip_ws(fragment)) if p]
        if not pieces:
            return True
        pat = "[^;{}]{0,300}?".join(pieces)
        pat = re.compile((r"(?<!\w)" if re.match(r"\w", pieces[0]) else "") + pat +
                         (r"(?!\w)" if re.search(r"\w$", pieces[-1]) else ""))
        hay = [b for n in scope for b in self.stripped_bodies.get(n, [])] if scope \
            else list(self.stripped.values())
        # the scripts (.py, .sh, .js, Makefile) have no functions to scope by
        if scripts:
            hay += [t for f, t in self.stripped.items() if not f.endswith((".c", ".h"))]
        if any(pat.search(h) for h in hay):
            return True
        # program output: a quote that a format string of the sources prints
        # (a message as the user sees it: die() and stop_together() put "PROGRAM: error: " or
        # "PROGRAM: " before the format's text)
        q = re.sub(r"^(train_gpt2|train_seq2seq|prepare|test_gpt2|test_seq2seq):(error:)?", "",
                   strip_ws(fragment))
        # (the format's own text must be most of the quote: "%s: %s" matches nothing)
        return any(n >= 0.6 * len(q) and rx.fullmatch(q) for n, rx in self.formats)

    def line_of(self, start, text, pos):
        return start + text.count("\n", 0, pos)

    # ---- one quote
    def check_quote(self, doc, line, q, scope, row=False):
        q = q.strip()
        if not q or q in ALLOWED or MATHS.search(q):
            return
        self.quotes += 1
        if PATHLIKE.match(q) and not q.startswith("//"):
            path = re.sub(r"[#:].*$", "", q).rstrip("/")
            if re.match(r"^[A-Z]+/", path):       # DIR/loss.svg: a placeholder directory
                return
            # {a,b} alternatives, a capital X or %08d as a placeholder: any file matching
            pats = [path]
            m = re.search(r"\{([^}]*)\}", path)
            if m:
                pats = [path[:m.start()] + alt + path[m.end():] for alt in m.group(1).split(",")]
            pats = [re.sub(r"%0?\d*d|(?<=_)[A-Z](?=[_.])", "*", p) for p in pats]
            for p in pats:
                if not (glob.glob(p) or glob.glob("data/ref/" + p) or p in self.targets
                        or os.path.basename(p) in self.targets or self.found(p, [])):
                    self.bad(doc, line, f"the file `{q}` does not exist")
                    break
            return
        if COMMAND.match(q):
            return self.check_command(doc, line, q)
        m = FLAG.match(q)
        if m and not q.startswith("--") or (m and m.group(1) in self.flags):
            if m.group(1) not in self.flags:
                self.bad(doc, line, f"the flag in `{q}` is not one the programs know ({m.group(1)})")
            return
        if NAME_QUOTE.match(q):
            for w in IDENT.findall(re.sub(r"\[[^\]]*\]", "", q)):
                if w in ARTICLE_NAMES or w in self.words:
                    continue
                if q.endswith("*") and any(x.startswith(w) for x in self.words):   # POS_*
                    continue
                self.bad(doc, line, f"`{w}` (in `{q}`) is not a name in the sources")
            return
        if all(w in ARTICLE_NAMES or w in ("True", "False") for w in IDENT.findall(q)) or \
                re.match(r"^(ModelArgs|nn\.|F\.|precompute_freqs_cis|multihead_attn)", q):
            return   # a line of an article's code
        if self.found(q, scope, scripts=not row) or self.found(q, []) and not scope:
            return
        m = SIGNATURE.match(q)
        if m and m.group(1) in self.bodies:   # dropout_mask(p, seed, step): its parameters
            defs = [b for _, b in self.bodies[m.group(1)]]
            missing = [a.strip() for a in m.group(2).split(",") if a.strip()
                       and not any(re.search(r"\b" + a.strip() + r"\b", d.split("{")[0]) for d in defs)]
            if not missing:
                return
        where = ("in " + ", ".join(sorted(set(scope)))) if scope else "in the sources"
        self.bad(doc, line, f"`{q}` is not {where}")

    def check_command(self, doc, line, q):
        parts = re.split(r"\s*(?:&&|\|\||\||;)\s*", q)
        if len(parts) > 1:
            for p in parts:
                if COMMAND.match(p) and not p.startswith("grep"):
                    self.check_command(doc, line, p)
            return
        words = q.split()
        prog = words[0]
        if prog == "make":
            for t in words[1:]:
                if "=" not in t and not t.startswith("-") and t not in self.targets:
                    self.bad(doc, line, f"`{q}`: make has no target {t}")
            return
        if prog.startswith("./") or prog.startswith("data/"):
            name = prog[2:] if prog.startswith("./") else prog
            if name not in self.programs and not os.path.exists(name):
                self.bad(doc, line, f"`{q}`: no program {prog}")
            for w in words[1:]:
                if re.match(r"^-[a-z][a-z0-9]*$", w) and w not in self.flags:
                    self.bad(doc, line, f"`{q}`: {prog} has no flag {w}")

    # ---- a claim "`F` calls X"
    def check_claims(self, doc, start, text):
        flat = text.replace("\n", " ")
        # sentences and clauses; ", and `G` verbs ..." opens a new clause with its own subject
        sentences = re.split(r"(?<=\.)\s+(?=[A-Z`(])|(?<=;)\s+|,?\s+and\s+(?=`\w+`\s+(?:adds|"
                             + CLAIM_VERBS[1:] + r"\b)", flat)
        prev_funcs = []
        for s in sentences:
            funcs_here = self.functions_in(s)
            m = re.match(r"^(?:Then |After [^,`]*, )?((?:`[A-Za-z_]\w*`(?:,| and| or)?\s*)+)" + CLAIM_VERBS + r"\b(.*)$", s)
            subj, rest = None, None
            if m:
                subj = [n for n in re.findall(r"`(\w+)`", m.group(1)) if n in self.bodies]
                rest = m.group(3)
            else:
                m = re.match(r"^(?:[^`]*?,\s*and\s+)?(?:each|they|They|Each)\s+" + CLAIM_VERBS + r"\b(.*)$", s)
                if m and prev_funcs:
                    subj, rest = prev_funcs, m.group(2)
            if subj and rest is not None:
                rest_code = re.sub(r"`[^`]*`", " ", rest)
                objects = [n for n in re.findall(r"`([A-Za-z_][\w]*)(?:\(\))?`", rest)
                           if n in self.bodies or n in self.tensors]
                objects += [w for w in IDENT.findall(rest_code) if w in self.tensors
                            and w not in PROSE_WORDS and len(w) >= 3]
                for o in dict.fromkeys(objects):
                    if o in subj:
                        continue
                    if not any(re.search(r"\b" + o + r"\b", b) for n in subj for _, b in self.bodies[n]):
                        ln = self.line_of(start, text, text.find(o)) if o in text else start
                        self.bad(doc, ln, f"{', '.join('`%s`' % n for n in subj)} does not use `{o}` "
                                          f"(the sentence: \"{s[:90]}...\")")
            if funcs_here:
                prev_funcs = funcs_here

    # ---- a file
    def check_doc(self, path):
        doc = Doc(path)
        units = list(doc.units())
        section_funcs = {}
        for kind, start, text, sec, _ in units:
            if kind in ("row", "para", "heading"):
                section_funcs.setdefault(sec, []).extend(self.functions_in(text))
        for kind, start, text, sec, marker in units:
            if kind == "heading":
                continue
            if kind == "fence":
                if marker:
                    continue
                for i, ln in enumerate(text.split("\n")):
                    ln = ln.split("  #")[0].strip()
                    if ln and COMMAND.match(ln):
                        self.quotes += 1
                        self.check_command(path, start + i, ln)
                        continue
                    # maths and diagrams, with the code's calls in them: a called name with
                    # an underscore (`stream_backward(`) and a field access (`s->dsum`) exist
                    for w in re.findall(r"\b([A-Za-z]\w*_\w+)\(|\b(\w+->\w+)", ln):
                        name = w[0] or w[1]
                        self.quotes += 1
                        if any(x not in self.words for x in name.split("->")):
                            self.bad(path, start + i, f"`{name}` (in a fenced block) is not a name in the sources")
                continue
            # a paragraph's code is in the functions it or its section names; a row's in its own
            scope = list(dict.fromkeys(self.functions_in(text) + section_funcs.get(sec, [])))
            if kind == "row":
                scope = self.functions_in(text)
            for m in re.finditer(r"`([^`]+)`", text):
                grep = text[:m.start()].endswith("grep ")   # "grep `text`": anywhere, as grep does
                self.check_quote(path, self.line_of(start, text, m.start()), m.group(1), [] if grep else scope,
                                 row=kind == "row" and bool(scope))
            prose = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), text)
            for m in PROSE_CMP.finditer(prose):
                ascii_q = m.group(0).replace("≤", "<=").replace("≥", ">=")
                self.quotes += 1
                if not self.found(ascii_q, scope):
                    where = ", ".join(sorted(set(scope))) if scope else "the sources"
                    self.bad(path, self.line_of(start, text, m.start()),
                             f"`{m.group(0)}` (as `{ascii_q}`) is not in {where}")
            if kind == "para":
                self.check_claims(path, start, text)
            # "`G` in `F`": G (a name or a line) is in the body of the function F
            for m in re.finditer(r"`([^`]+)`\s+in\s+`(\w+)`", text.replace("\n", " ")):
                g, f = m.group(1), m.group(2)
                if f not in self.bodies or g in ALLOWED or MATHS.search(g):
                    continue
                self.quotes += 1
                if not self.found(g.rstrip("()"), [f], scripts=False):
                    self.bad(path, self.line_of(start, text, m.start()), f"`{g}` is not in `{f}`")
            # "`test_errata` E14": the test that prints the check E14
            for m in re.finditer(r"`(test_\w+)(?:\(\))?`\s+(E\d+)\b((?:(?:,| and|,\s+and)\s+E\d+\b)*)", text):
                for label in [m.group(2)] + re.findall(r"E\d+", m.group(3)):
                    self.quotes += 1
                    if m.group(1) in self.bodies and not any(
                            re.search(r'"' + label + r"(?!\d)", b) for b in self.reachable(m.group(1))):
                        printer = [n for n, v in self.bodies.items() if n.startswith("test_")
                                   and any(re.search(r'"' + label + r"(?!\d)", b) for _, b in v)]
                        self.bad(path, self.line_of(start, text, m.start()),
                                 f"`{m.group(1)}` does not print {label}"
                                 + (f" (`{printer[0]}` does)" if printer else ""))
            # check names: "finite differences ...", or quoted right after a test's name, or
            # in a paragraph that opens with "Checks"
            if re.search(r"\bChecks?\b|`(test_\w+|check_state|check_training)", text):
                opens = re.match(r"^\W*(Checks?|Tests?)\b", text)
                for m in re.finditer(r'"([^"`\n]{6,80})"', prose.replace("\n", " ")):
                    before = text[max(0, m.start() - 60):m.start()].replace("\n", " ")
                    if not (opens or m.group(1).startswith("finite differences")
                            or re.search(r"`(test_\w+|check_\w+)`\s*\(?[^`]{0,40}$", before)):
                        continue
                    self.check_test_name(path, self.line_of(start, text, m.start()), m.group(1))
            for m in re.finditer(r"[Tt]he first loss,?\s*(\d+\.\d+)", text):
                self.check_first_loss(path, self.line_of(start, text, m.start()), m.group(1))

    def check_test_name(self, path, line, name):
        """a check quoted by its name ("finite differences layernorm dinp / dweight") is
        one the test programs print: its first alternative, before " (" or "/"."""
        first = re.split(r"\s*/\s*|\s+\(", name)[0]
        first = re.sub(r"^finite differences,?\s+", "", first)
        self.quotes += 1
        q = strip_ws(first)
        if q not in self.test_strings and not self.test_format_prints(q) and not self.found(first, []):
            self.bad(path, line, f'the check "{name}" is not a name the tests print ("{first}")')

    def test_format_prints(self, q):
        """q (normalised) is part of what a format string of the tests prints: with its
        numbers as %d, a part of the format; or the format's text before a %s, then a string"""
        q_num = strip_ws(re.sub(r"(?<![\w.])\d+(\.\d+)?(e[-+]?\d+)?", "%d", q))
        for fmt in self.test_formats:
            if q_num in fmt:
                return True
            # a prefix of the format, its %s standing for any short text
            pieces = re.split(r"(%s)", fmt)
            for k in range(1, len(pieces) + 1):
                rx = "".join(".{0,40}?" if p == "%s" else re.escape(p) for p in pieces[:k])
                literal = sum(len(p) for p in pieces[:k] if p != "%s")
                if literal >= 0.6 * len(q_num) and re.fullmatch(rx, q_num):
                    return True
            head = fmt.split("%s")[0]
            if "%s" in fmt and len(head) >= 4 and q.startswith(head) and strip_ws(q[len(head):]) in self.test_strings:
                return True
        return False

    def check_first_loss(self, path, line, quoted):
        self.quotes += 1
        readme = open("README.md", encoding="utf-8").read()
        m = re.search(r"^step\s+1/\d+ \| loss (\d+\.\d+)", readme, re.M)
        if not m:
            return self.bad(path, line, "README.md has no transcript line `step     1/N | loss X`")
        digits = len(quoted.split(".")[1])
        if f"{float(m.group(1)):.{digits}f}" != quoted:
            self.bad(path, line, f"the first loss {quoted}: the default run prints {m.group(1)} (README.md)")

    def reachable(self, name, depth=2):
        """the bodies of name and of the functions it calls, to depth calls deep; a table of
        functions that it names (ERRATA_ARTICLES[i].check()) counts as calls of them"""
        out, todo = [], [(name, 0)]
        seen = {name}
        while todo:
            n, d = todo.pop()
            for _, b in self.bodies.get(n, []):
                out.append(b)
                if d < depth:
                    called = set(re.findall(r"\b(\w+)\(", b))
                    for table in set(re.findall(r"\b([A-Z][A-Z0-9_]+)\[", b)) & set(self.tables):
                        called |= set(IDENT.findall(self.tables[table]))
                    for callee in called - seen:
                        if callee in self.bodies:
                            seen.add(callee)
                            todo.append((callee, d + 1))
        return out

    def check_test_table(self, path):
        """a table of tests "in the order in which test_gpt2 runs them" lists every test that
        test_gpt2.c's table of groups runs"""
        text = open(path, encoding="utf-8").read()
        m = re.search(r"^\| test \(in `test_gpt2.c`\).*?(?=^[^|]|\Z)", text, re.M | re.S)
        if not m:
            return
        line = text[:m.start()].count("\n") + 1
        listed = [n for row in m.group(0).split("\n") if row.startswith("| `")
                  for n in re.findall(r"`((?:test|check)_\w+)`", row.split("|")[1])]
        # test_gpt2.c's CHECK_GROUPS, in order; a group refs_X (a check on the files of -r DIR)
        # stands for the tests its body calls
        groups = re.search(r"\bCHECK_GROUPS\[\]\s*=\s*\{(.*?)\};", self.texts.get("test_gpt2.c", ""), re.S)
        called = []
        for fn in re.findall(r"\{\"[^\"]*\",\s*(\w+)\}", groups.group(1) if groups else ""):
            body = next((b for f, b in self.bodies.get(fn, []) if f == "test_gpt2.c"), "")
            called += re.findall(r"\b((?:test|check)_\w+)\(", body) if fn.startswith("refs_") else [fn]
        called = list(dict.fromkeys(called))
        self.quotes += 1
        for n in called:
            if n not in listed:
                self.bad(path, line, f"the table of tests does not list `{n}`, which test_gpt2's CHECK_GROUPS runs")
        for n in listed:
            if n not in called:
                self.bad(path, line, f"the table of tests lists `{n}`, which test_gpt2's CHECK_GROUPS does not run")
        order = [n for n in listed if n in called]
        if order != [n for n in called if n in listed]:
            self.bad(path, line, "the table of tests is not in the order of test_gpt2's main: "
                     + ", ".join(n for n in called if n in listed))

    def check_step_table(self):
        text = open("doc/README.md", encoding="utf-8").read()
        m = re.search(r"^### Article 000.*?(?=^### )", text, re.M | re.S)
        table = m.group(0) if m else ""
        for name, defs in sorted(self.bodies.items()):
            for f, body in defs:
                if f in ("train_gpt2.c", "test_gpt2.c") and STEP_LABEL.search(body):
                    self.quotes += 1
                    if f"`{name}`" not in table:
                        self.bad("doc/README.md", text[:text.find(table)].count("\n") + 1 if table else 1,
                                 f"`{name}` ({f}) carries the article's step labels but is not named "
                                 "in the table of article 000's steps")


LINE_COUNT = re.compile(r"`([\w./-]+\.(?:c|h|sh|py))`|~?(\d[\d,]*)[ -]lines?\b")


def check_line_counts(c, path):
    """a count of lines said of a file (`util/dist.h` (508 lines, `train_gpt2.c` is a
    ~2,050-line ...): the file's lines now, within 5% (a count rounded to "~2,050")"""
    text = open(path, encoding="utf-8").read()
    for unit in re.split(r"\n\s*\n|\n(?=\|)", text):
        named = None
        for m in LINE_COUNT.finditer(unit):
            if m.group(1):
                named = (m.group(1), m.end())
                continue
            if not named or m.start() - named[1] > 150 or not os.path.isfile(named[0]):
                continue
            c.quotes += 1
            said = int(m.group(2).replace(",", ""))
            with open(named[0], encoding="utf-8", errors="replace") as fh:
                has = sum(1 for _ in fh)
            if abs(has - said) > 0.05 * has:
                line = text[:text.find(unit)].count("\n") + unit[:m.start()].count("\n") + 1
                c.bad(path, line, f"`{named[0]}` is said to have {m.group(0).strip()}: it has {has} lines")


def check_readme(c):
    """README.md a first page: at most README_MAX_LINES lines, `attention_forward` within its
    first 50, the sequel the last step of "How to read this code"; and each section of the
    old README, with its facts, on the page README_MOVED names"""
    lines = open("README.md", encoding="utf-8").read().split("\n")
    c.quotes += 1
    if len(lines) - 1 > README_MAX_LINES:
        c.bad("README.md", README_MAX_LINES + 1, f"README.md has {len(lines) - 1} lines, more than "
              f"{README_MAX_LINES}: the manual belongs in doc/")
    if not any("`attention_forward`" in ln for ln in lines[:50]):
        c.bad("README.md", 50, "no pointer to `attention_forward` in README.md's first 50 lines")
    m = re.search(r"^## How to read this code\n(.*?)(?=^## )", "\n".join(lines), re.M | re.S)
    steps = re.findall(r"^\d+\. (.*?)(?=^\d+\. |^\S|\Z)", m.group(1), re.M | re.S) if m else []
    if not steps or "`train_seq2seq.c`" not in steps[-1]:
        c.bad("README.md", 1, "the last step of \"How to read this code\" does not name `train_seq2seq.c`")
    for old, page, heading, facts in README_MOVED:
        c.quotes += 1
        if not os.path.isfile(page):
            c.bad(page, 1, f"README's old section \"{old}\" went to {page}, which does not exist")
            continue
        text = open(page, encoding="utf-8").read()
        if not re.search(r"^#+ " + re.escape(heading) + r"\s*$", text, re.M):
            c.bad(page, 1, f"README's old section \"{old}\": {page} has no heading \"{heading}\"")
        flat = re.sub(r"\s+", " ", text)
        for fact in facts:
            if re.sub(r"\s+", " ", fact.replace("\\n", " ")) not in flat:
                c.bad(page, 1, f"README's old section \"{old}\": {page} no longer says \"{fact}\"")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    c = Checker()
    docs = sys.argv[1:] or sorted(glob.glob("doc/*.md")) + ["README.md"]
    for d in docs:
        c.check_doc(d)
        c.check_test_table(d)
        check_line_counts(c, d)
    c.check_step_table()
    if not sys.argv[1:]:
        check_readme(c)
    for s in c.stale:
        print(s)
    print(f"doc check: {c.quotes} quotes, {len(c.stale)} stale")
    return 1 if c.stale else 0


if __name__ == "__main__":
    sys.exit(main())
