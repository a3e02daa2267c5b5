#pragma once
// What bounds a decode, verify or drafter pass on this machine, measured beside it: the bytes it
// reads at the memory read bandwidth, and its multiply-adds at the peak of the instruction the
// few-row products multiply with. A pass of B rows over bf16 weights does 2 · B FLOPs per weight
// value, B per weight byte: one row is bound by reading, 16 rows can be bound by arithmetic
// (16 FLOPs a byte outrun two cores' bf16 dot products at ~30 GB/s).

#include <functional>

#include "draftgate/io/checkpoint.h"

namespace draftgate::bench {

// The bytes of a checkpoint's tensors, less an untied embedding (a step reads one row of it).
double checkpoint_bytes(const io::Checkpoint& ckpt);

// Best of three sums of the buffer MemoryReadBandwidth times, bytes per second.
double read_bandwidth();

// The share of its read bound (`bytes` at the read bandwidth) a pass reaches, the bound measured
// right before the pass: `pairs` times one sum of MemoryReadBandwidth's buffer, then one pass; the
// median of the pairs' bound / pass time. This host's read bandwidth moved between 40 and 77 GB/s
// within a session, so a bound measured minutes apart from the pass measures the host's moment as
// much as the pass (one build's decode came out at 63 % and 114 % of such bounds in two runs).
double paired_read_share(double bytes, int pairs, const std::function<void()>& pass);

// Nanoseconds one load from memory takes when nothing overlaps it: a chase of dependent loads, one
// per 64-byte line, through 1 GiB on huge pages (the last-level cache holds 3 % of it) in one
// random cycle; best of three. With the read bandwidth it says how many bytes a stream must keep in
// flight (bandwidth x latency) to reach it: the host that measured 400 ns here (2026-12-07) ran
// decode and verify steps at half the speed of earlier hosts of the same kind
// (docs/performance.md).
double memory_latency_ns();

// FLOPs per second of independent chains of the instruction the few-row products multiply bf16
// weights with on this CPU (vdpbf16ps where it has AVX-512 BF16, 8-lane float32 FMAs elsewhere),
// on every intra-op thread; best of five. 0 where the CPU has AMX: its few-row products run on
// the tiles, whose arithmetic is far beyond the read bandwidth at these row counts.
double dot_product_peak();
// The instruction dot_product_peak() times ("vdpbf16ps", "float32 fma", or "amx").
const char* dot_product_instruction();

// Per-thread chains (dot_product_peak_bf16.cpp, machine_bounds.cpp): FLOPs done in `steps` steps.
double bf16_dot_chains(long steps, float* sink);
double float32_fma_chains(long steps, float* sink);

}  // namespace draftgate::bench
