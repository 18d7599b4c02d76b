/*
util/run.h: a training run around its model, the same for train_gpt2 and train_seq2seq.
Plumbing that knows no model: it sees one through RunModel, its weights and AdamW's
moments as flat arrays and a function that writes its checkpoint. Here:
- resuming: -y 1 finds the newest checkpoint of -o that has its state file (find_resume),
  and reads the state back into the moments (read_resumed_state); -o of another run is
  refused (protect_output_dir);
- save_checkpoint: model_STEP.bin, state_STEP.bin and the loss curve as one group of atomic
  writes (util/io.h), and never of weights that are not finite, so that the newest
  checkpoint on disk is always a usable one;
- the stops: after Ctrl-C or SIGTERM, with where training stood saved (stop_after); at a
  loss or gradient norm that is not finite (stop_if_not_finite);
- a step's line (print_step), timed by a RunClock, and the run's last line.
*/
#ifndef UTIL_RUN_H
#define UTIL_RUN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"
#include "cli.h"         // Options
#include "dataloader.h"  // DataLoader (validation_batches)
#include "dist.h"        // process 0 writes; -z 1's moments are sharded
#include "progress.h"    // format_duration
#include "schedulers.h"  // learning_rate (print_schedule_change)
#include "state.h"       // TrainState, the state file
#include "svg.h"         // LossHistory, the loss curve

// a model as the run sees it
typedef struct {
    float* params;          // (n) the weights, in the checkpoint's order
    size_t num_parameters;  // n
    float* m;               // AdamW's moments: of this process's shard with -z 1 (util/dist.h),
    float* v;               //   else (n); NULL before the first update
    const void* model;      // what write_checkpoint writes
    void (*write_checkpoint)(const void* model, const char* path);
} RunModel;
// A model split over the processes (train_gpt2's -tpar) is put together on process 0 by its
// program before a save (all of them take part), and its RunModel is then of the whole model;
// on resume the program reads the whole moments (num_parameters of them) and keeps its share.

// what a run keeps in -o, beside the model
typedef struct {
    int resume_step;     // the checkpoint resumed from, or -1
    char last[4096];     // the newest checkpoint written or resumed from ("" = none)
    char title[512];     // the loss curve's title (loss.svg)
    LossHistory history; // every step's loss and learning rate, the validation losses
} Checkpoints;

// dir/KIND_STEP.bin: KIND model or state
static void checkpoint_path(char* out, size_t size, const char* dir, const char* kind, int step) {
    snprintf(out, size, "%s/%s_%08d.bin", dir, kind, step);
}

// -y 1: the newest step of -o with both a checkpoint and its state file, named in ck->last;
// -1 without -y 1, or (with a note) when -o has none yet
static int find_resume(const Options* o, Checkpoints* ck) {
    ck->resume_step = o->resume ? latest_checkpoint(o->out_dir, 1) : -1;
    int newest = o->resume ? latest_checkpoint(o->out_dir, 0) : -1;  // a model without its state?
    if (newest > ck->resume_step) {  // a run killed between the two renames, or a file removed
        char lone[4096];
        struct stat sb;
        checkpoint_path(lone, sizeof lone, o->out_dir, "model", newest);
        if (stat(lone, &sb) != 0) checkpoint_path(lone, sizeof lone, o->out_dir, "state", newest);
        if (ck->resume_step >= 0)
            printf("-y 1: '%s' has no partner (model and state are written as a pair): resuming from the "
                   "newest whole pair, step %d; loss.tsv keeps the steps after it until they are trained "
                   "again\n", lone, ck->resume_step);
        else
            printf("-y 1: '%s' has no partner (model and state are written as a pair) and '%s' has no whole "
                   "pair: starting from the beginning, replacing its files as the run goes\n", lone, o->out_dir);
    } else if (o->resume && ck->resume_step < 0)
        printf("-y 1: no checkpoint in '%s' yet, starting from the beginning\n", o->out_dir);
    if (ck->resume_step >= 0)
        checkpoint_path(ck->last, sizeof ck->last, o->out_dir, "model", ck->resume_step);
    return ck->resume_step;
}

// A state (version 4) records the CRC-32C of the checkpoint written with it: the checkpoint
// beside it must be that one, not another run's of the same step, nor a damaged one
// (recorded: read_train_state's answer, -1 for a state written before version 4)
static void check_state_names_checkpoint(const char* state_path, int64_t recorded, const char* checkpoint) {
    if (recorded < 0) return;
    uint32_t crc = file_crc32c(checkpoint);
    if (crc != (uint32_t)recorded)
        die("'%s' is not the checkpoint '%s' was written with (its CRC-32C is %08x, the state records "
            "%08x): another run's, or damaged; resume from a matching pair", checkpoint, state_path, crc,
            (uint32_t)recorded);
}

// the state file beside the resumed checkpoint into *st, and into m's moments (allocated):
// with -z 1 this process's shard of them, the file holding all of them
static void read_resumed_state(const Options* o, const Checkpoints* ck, TrainState* st, const RunModel* m) {
    char path[4096];
    checkpoint_path(path, sizeof path, o->out_dir, "state", ck->resume_step);
    size_t n = m->num_parameters, lo = dist_shard_begin(), shard = dist_shard_end(n) - lo;
    float* mm = dist.zero ? mallocCheck(n * sizeof(float)) : m->m;
    float* vv = dist.zero ? mallocCheck(n * sizeof(float)) : m->v;
    check_state_names_checkpoint(path, read_train_state(path, st, mm, vv, n), ck->last);
    if (dist.zero) {  // this process keeps its shard of them (util/dist.h)
        memcpy(m->m, mm + lo, shard * sizeof(float));
        memcpy(m->v, vv + lo, shard * sizeof(float));
        free(mm), free(vv);
    }
    printf("resuming from %s at step %d\n", ck->last, st->step);
}

// -o holds checkpoints and this run neither resumes them (-y 1) nor replaces them (-ow 1):
// refuse, rather than mix two runs' checkpoints and loss curves
static inline void protect_output_dir(const Options* o) {
    int newest = latest_checkpoint(o->out_dir, 0);
    if (newest < 0 || o->resume) return;
    if (!o->overwrite)
        die("-o '%s' holds the checkpoints of another run (the newest of step %d): resume it with -y 1, "
            "replace it with -ow 1, or choose another -o", o->out_dir, newest);
    printf("-ow 1: removed %d checkpoint(s) of another run from '%s'\n", prune_checkpoints(o->out_dir, 0, 0),
           o->out_dir);
}

// -y 1 with another -x than the run was started with: the schedule is computed for the new
// -x from here on (as llm.c's), so the learning rate jumps; one line says by how much
static inline void print_schedule_change(const Options* o, int old_steps, int step) {
    float before = learning_rate(o->schedule, step, o->lr, o->warmup, old_steps, o->final_lr_frac);
    float now = learning_rate(o->schedule, step, o->lr, o->warmup, o->max_steps, o->final_lr_frac);
    printf("note: -x %d, the run was started with -x %d: the learning-rate schedule now ends at step %d "
           "(at step %d the learning rate is %.2e, not %.2e)\n", o->max_steps, old_steps, o->max_steps, step,
           now, before);
}

// the validation batches: -m, or (-m 0) as many as fit in VAL_TOKENS tokens, or (-m -1) all
static inline int validation_batches(const Options* o, const DataLoader* val) {
    size_t all = val->total_batches, fit = VAL_TOKENS / ((size_t)val->B * val->T);
    size_t n = o->val_batches > 0 ? (size_t)o->val_batches : o->val_batches < 0 ? all : fit > 0 ? fit : 1;
    return (int)(n < all ? n : all);
}

// N processes: AdamW's state per process, all the moments, (-z 1) a shard's, or (-tpar) those
// of the process's share of the model, num_parameters (util/dist.h)
static inline void print_optimizer_memory(size_t num_parameters) {
    if (dist.size == 1) return;
    size_t shard = dist_shard_end(num_parameters) - dist_shard_begin();
    printf("optimizer: AdamW's moments %.1f MiB per process (%s)\n", 2.0 * shard * sizeof(float) / 1048576,
           dist.zero ? "-z 1: sharded over the processes, process 0's shard" :
           dist.tp > 1 ? "-tpar: of each process's share of the model" : "-z 0: all of them on each");
}

// writes the loss curve (loss.svg to look at, loss.tsv to resume it from), then -o's
// model_STEP.bin and state_STEP.bin (st: where training stands before step): two groups, each
// landing whole or not at all, the curve first. Refuses weights that are not finite. -nk, -nm: the older checkpoints pruned.
static void save_checkpoint(const Options* o, Checkpoints* ck, const RunModel* m, int step,
                            const TrainState* st) {
    char path[4096];
    size_t n = m->num_parameters;
    float *mm = m->m, *vv = m->v;
    if (dist.zero) {  // -z 1: the state file holds the whole moments; process 0 gathers them
        mm = dist.rank == 0 ? mallocCheck(n * sizeof(float)) : NULL;
        vv = dist.rank == 0 ? mallocCheck(n * sizeof(float)) : NULL;
        dist_gather_moments(mm, m->m);
        dist_gather_moments(vv, m->v);
    }
    if (dist.rank != 0) return;  // N processes: the weights are the same, process 0 writes them
    for (size_t i = 0; i < n; i++)
        if (!isfinite(m->params[i]))
            die("the weights became nan or inf after step %d; not writing a checkpoint. Last good "
                "checkpoint: %s", step, ck->last[0] ? ck->last : "none");
    float* zeros = mm ? NULL : callocCheck(n, sizeof(float));  // no update yet: the moments are zero
    atomic_begin();  // the loss curve first, both files together: a kill between the two groups
    history_save(&ck->history, o->out_dir, ck->title);  // leaves it newer than the checkpoints,
    atomic_keep();                                      // never older (a resume reads it up to its step)
    checkpoint_path(ck->last, sizeof ck->last, o->out_dir, "model", step);
    atomic_begin();  // the checkpoint and its state land together, or neither does
    m->write_checkpoint(m->model, ck->last);
    checkpoint_path(path, sizeof path, o->out_dir, "state", step);  // it names the checkpoint just written
    write_train_state(path, st, atomic_committed_crc, mm ? mm : zeros, vv ? vv : zeros, n);
    if (dist.zero) free(mm), free(vv);
    free(zeros);
    atomic_keep();
    if (o->keep_checkpoints > 0) prune_checkpoints(o->out_dir, o->keep_checkpoints, o->major_every);
}

// Ctrl-C or SIGTERM came: save where training stands at step, `now` (a checkpoint, as any
// other), unless this run has trained nothing since first_step, and stop with exit status 1
// (not an error: the line says "stopped"), so scripts see it
static void stop_after(const Options* o, Checkpoints* ck, const RunModel* m, int step, int first_step,
                       const TrainState* now) {
    if (!o->out_dir[0] || step == first_step)
        stop_together("stopped by signal %d after %d steps; nothing %s", stop_signal, step,
                      o->out_dir[0] ? "new saved" : "saved (no -o)");
    save_checkpoint(o, ck, m, step, now);
    stop_together("stopped by signal %d after %d steps; saved %s (resume with -y 1)", stop_signal, step,
                  ck->last);
}

// a training loss or gradient norm that is not finite ends the run, naming the newest
// checkpoint, which save_checkpoint made sure is finite
static void stop_if_not_finite(const char* what, float value, int step, const Checkpoints* ck) {
    if (isfinite(value)) return;
    die_together("the %s became %f at step %d; stopping. Last good checkpoint: %s", what, value, step,
                 ck->last[0] ? ck->last : "none");
}

// the time of a run's steps: the first (0, or the resumed step) warms up and is not timed
typedef struct {
    int first_step;
    double start;        // when the run began, now_seconds()
    double stepping;     // the seconds of every step so far
    double timed;        // the seconds of the timed steps, and how many
    int timed_steps;
} RunClock;

static RunClock run_clock(int first_step) { return (RunClock){first_step, now_seconds(), 0.0, 0.0, 0}; }

// step (0-based) of max_steps is done, in dt seconds: its line, with the throughput (`units`
// of `unit` a step: "tok", "pairs"), the run's time so far and an ETA at the mean step time
static void print_step(RunClock* c, int step, int max_steps, float loss, float lr, float norm, double dt,
                       double units, const char* unit) {
    char took[32], eta[32];
    c->stepping += dt;
    if (step > c->first_step) c->timed += dt, c->timed_steps++;
    double remaining = c->stepping / (step + 1 - c->first_step) * (max_steps - step - 1);
    printf("step %5d/%d | loss %.6f | lr %.2e | norm %.4f | %.1f ms | %.0f %s/s | %s, ETA %s\n", step + 1,
           max_steps, loss, lr, norm, dt * 1e3, units / dt, unit,
           format_duration(now_seconds() - c->start, took, sizeof took),
           format_duration(remaining, eta, sizeof eta));
    fflush(stdout);
}

// the last line of a training run: its steps' mean time and throughput (units of unit a
// step), N processes' communication, the final validation loss (NaN: none) and checkpoint
static void print_training_done(const RunClock* c, int steps, double units, const char* unit, float val_loss,
                                const char* checkpoint) {
    if (c->timed_steps == 0) return;
    double seconds_per_step = c->timed / c->timed_steps;
    printf("done: %d step%s, %.1f ms/step (%.0f %s/s)", steps, steps == 1 ? "" : "s", 1e3 * seconds_per_step,
           units / seconds_per_step, unit);
    if (dist.allreduce_calls > 0) {  // exposed: waited for after the backward pass; hidden: behind it
        double ms = 1e3 * dist.allreduce_seconds / dist.allreduce_calls;
        const char* sum = dist.zero && dist.buckets ? "reduce-scatter" : "all-reduce";  // -z 1's buckets
        printf(", %s %.2f ms/step exposed (%.1f%%)", sum, ms, ms / (10 * seconds_per_step));
        if (dist.buckets)
            printf(" + %.2f ms/step hidden behind the backward pass (buckets of %zu KiB)",
                   1e3 * dist.hidden_seconds / dist.allreduce_calls, DIST_BUCKET_BYTES >> 10);
        else printf(", blocking (DIST_BLOCKING=1)");
    }
    if (dist.tp > 1) {  // -tpar: the all-reduces inside the timed steps (dist.tp_step_seconds)
        double ms = 1e3 * dist.tp_step_seconds / c->timed_steps;
        printf(", tensor-parallel all-reduces %.2f ms/step (%.1f%%)", ms, ms / (10 * seconds_per_step));
    }
    if (dist.size > 1 && dist.updates > 0) {  // the optimizer: on a shard with -z 1, then the gather
        double gather = 1e3 * dist.gather_seconds / (dist.gathers > 0 ? dist.gathers : dist.updates);
        printf(", AdamW %.2f ms/step", 1e3 * dist.update_seconds / dist.updates);
        const char* how = dist.gather_overlap && dist.buckets
                              ? "exposed (waited for by the forward pass, -zg 1)" : "(after AdamW)";
        if (dist.zero) printf(" on a shard (-z 1) + all-gather %.2f ms/step %s", gather, how);
    }
    if (!isnan(val_loss)) printf(", final val loss %.4f", val_loss);
    if (checkpoint[0]) printf(", checkpoint %s", checkpoint);
    printf("\n");
}

#endif
