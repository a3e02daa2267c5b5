#include "draftgate/model/amx_matmul.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <stdexcept>

#include "amx_tiles.h"

namespace draftgate::model {
namespace {

// CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE; and AVX-512F and BW with their state saved
// by the OS (the tiles' write-out, the attention's value pairs).
bool cpu_has_amx_bf16() {
#if DRAFTGATE_AMX_KERNEL
  unsigned eax = 7, ebx = 0, ecx = 0, edx = 0;
  __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));
  return ((edx >> 22) & 1) != 0 && ((edx >> 24) & 1) != 0 && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

// x [rows, k] as `terms` bf16 terms in the tile layout of amx_tiles.h, rows padded with zeros. The
// threads take ranges of k pairs, so each writes a contiguous part of the layout (ranges of rows
// would write every cache line from both threads); a verify block's x (16 rows, tens of KB) is
// packed on the calling thread, where a parallel region would cost more than the copy.
void pack_terms(const at::Tensor& x, int terms, std::int64_t mp, std::uint16_t* xp) {
  const std::int64_t rows = x.size(0), k = x.size(1);
  const std::int64_t term_stride = k / 2 * mp * 2;
  constexpr std::int64_t kSerialValues = std::int64_t{1} << 17;
  const std::int64_t grain = std::max<std::int64_t>(16, kSerialValues / (terms * mp));
  if (x.scalar_type() == at::kBFloat16) {
    // One term: a pair of bf16 values is one 32-bit word, copied whole.
    const auto* pairs = static_cast<const std::uint32_t*>(x.data_ptr());
    auto* out = reinterpret_cast<std::uint32_t*>(xp);
    at::parallel_for(0, k / 2, grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t pair = begin; pair < end; ++pair)
        for (std::int64_t m = 0; m < mp; ++m)
          out[pair * mp + m] = m < rows ? pairs[m * (k / 2) + pair] : 0;
    });
    return;
  }
  const float* data = x.data_ptr<float>();
  at::parallel_for(0, k / 2, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t pair = begin; pair < end; ++pair)
      for (std::int64_t m = 0; m < mp; ++m)
        for (std::int64_t j = 2 * pair; j < 2 * pair + 2; ++j) {
          // x = x1 + x2 + x3 exactly: each residual is exact in float32, 8 bits shorter.
          float rest = m < rows ? data[m * k + j] : 0.0f;
          for (int t = 0; t < terms; ++t) {
            const c10::BFloat16 term(rest);  // rounded to nearest even
            xp[t * term_stride + (pair * mp + m) * 2 + j % 2] = term.x;
            rest -= static_cast<float>(term);
          }
        }
  });
}

// Reused per thread across calls: fresh buffers of tens of MB would be pages to fault in each time.
at::Tensor& scratch(std::int64_t elements, at::ScalarType dtype, int slot) {
  thread_local at::Tensor held[2];
  at::Tensor& t = held[slot];
  if (!t.defined() || t.numel() < elements) {
    c10::InferenceMode inference;
    t = at::empty({elements}, dtype);
  }
  return t;
}

}  // namespace

bool amx_available() {
#if DRAFTGATE_AMX_KERNEL
  static const bool available = cpu_has_amx_bf16() && amx::request_tiles();
  return available;
#else
  return false;
#endif
}

bool amx_matmul_applies(const at::Tensor& x, const at::Tensor& w) {
  return w.dim() == 2 && w.scalar_type() == at::kBFloat16 && w.device().is_cpu() &&
         w.stride(1) == 1 && w.size(0) % 32 == 0 && w.size(1) % 32 == 0 && w.size(1) > 0 &&
         x.dim() >= 1 && x.device().is_cpu() && x.size(-1) == w.size(1) &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) &&
         !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
}

namespace {

// Every product x · wᵢᵀ: x packed once, the weights' rows in one parallel region.
std::vector<at::Tensor> multiply(const at::Tensor& x, const std::vector<at::Tensor>& ws,
                                 ProductOutput output) {
  if (!amx_available())
    throw std::invalid_argument("amx_matmul: no AMX here, or not a product it takes");
  for (const at::Tensor& w : ws)
    if (!amx_matmul_applies(x, w) || w.size(1) != ws.front().size(1))
      throw std::invalid_argument("amx_matmul: no AMX here, or not a product it takes");
  if (output == ProductOutput::kWidened && x.scalar_type() != at::kBFloat16)
    throw std::invalid_argument("amx_matmul: only a bf16 product is widened");
  c10::InferenceMode inference;
  const std::int64_t k = ws.front().size(1);
  const at::Tensor xs = x.reshape({-1, k}).contiguous();
  const std::int64_t rows = xs.size(0), mp = (rows + 15) / 16 * 16;
  const int terms = x.scalar_type() == at::kFloat ? 3 : 1;
  const bool widened = output == ProductOutput::kWidened;
  std::vector<at::Tensor> ys;
  for (const at::Tensor& w : ws) {
    std::vector<std::int64_t> shape = x.sizes().vec();
    shape.back() = w.size(0);
    ys.push_back(at::empty(shape, widened ? x.options().dtype(at::kFloat) : x.options()));
  }
  if (rows == 0) return ys;
  at::Tensor& packed = scratch(terms * k * mp, at::kBFloat16, 0);
  auto* xp = reinterpret_cast<std::uint16_t*>(packed.data_ptr());
  pack_terms(xs, terms, mp, xp);
  // Half of a 2 MB L2 for the x tiles of a chunk of k: all of k for a verify block (one term, 16
  // rows: 32 K values), ~1300 for 128 rows of a float32 x in three terms.
  constexpr std::int64_t kXTileBytes = std::int64_t{1} << 20;
  const std::int64_t chunk = std::max<std::int64_t>(32, kXTileBytes / (terms * mp * 2) / 32 * 32);
  const amx::YFormat format = widened                            ? amx::YFormat::kBf16AsFloat32
                              : x.scalar_type() == at::kBFloat16 ? amx::YFormat::kBf16
                                                                 : amx::YFormat::kFloat32;
  std::vector<amx::Operands> operands;
  std::int64_t widest = 0;
  for (std::size_t i = 0; i < ws.size(); ++i) {
    operands.push_back({static_cast<const std::uint16_t*>(ws[i].data_ptr()), ws[i].stride(0), xp,
                        terms, mp, k, chunk, nullptr, ys[i].data_ptr(), format, rows,
                        ws[i].size(0)});
    widest = std::max(widest, ws[i].size(0));
  }
  const auto run = [](const amx::Operands& a, std::int64_t begin, std::int64_t end) {
#if DRAFTGATE_AMX_KERNEL
    amx::multiply_rows(a, begin, end);
#else
    (void)a, (void)begin, (void)end;
#endif
  };
  if (chunk < k) {
    // Partial sums between chunks of k: the weights one after the other through one buffer the
    // size of the widest, each weight's blocks of 32 rows over the threads.
    float* partial = scratch(widest * mp, at::kFloat, 1).data_ptr<float>();
    for (amx::Operands& a : operands) {
      a.c = partial;
      at::parallel_for(0, a.n / 32, 1,
                       [&](std::int64_t begin, std::int64_t end) { run(a, begin * 32, end * 32); });
    }
    return ys;
  }
  // One chunk (a verify block, a decode row): every weight's blocks of 32 rows in one parallel
  // region, over the weights one after the other.
  std::vector<std::int64_t> first_block{0};  // weight i's blocks: [first_block[i], [i + 1])
  for (const amx::Operands& a : operands) first_block.push_back(first_block.back() + a.n / 32);
  at::parallel_for(0, first_block.back(), 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::size_t i = 0; i < operands.size(); ++i) {
      const std::int64_t lo = std::max(begin, first_block[i]);
      const std::int64_t hi = std::min(end, first_block[i + 1]);
      if (lo < hi) run(operands[i], (lo - first_block[i]) * 32, (hi - first_block[i]) * 32);
    }
  });
  return ys;
}

}  // namespace

at::Tensor amx_matmul(const at::Tensor& x, const at::Tensor& w, ProductOutput output) {
  return multiply(x, {w}, output).front();
}

std::vector<at::Tensor> amx_matmul(const at::Tensor& x, const std::vector<at::Tensor>& ws) {
  if (ws.empty()) return {};
  return multiply(x, ws, ProductOutput::kXDtype);
}

}  // namespace draftgate::model
