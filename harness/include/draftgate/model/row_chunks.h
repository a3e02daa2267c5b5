#pragma once

#include <cstdint>
#include <functional>

namespace draftgate::model {

// Runs `rows(begin, end)` over [0, n) in chunks of `chunk` rows on up to `threads` threads. Each
// thread walks its own equal share front to back (so its reads stay one stream and its prefetches
// ahead land in its own next chunk), then takes chunks from the back of the shares not yet done:
// a thread slowed by the host or by a busier memory channel no longer leaves the other waiting at
// the end of every product. Every row is run exactly once; which thread runs it does not change
// its result. On one thread, or called inside a parallel region, it is one call over [0, n).
void for_row_chunks(std::int64_t n, std::int64_t chunk, int threads,
                    const std::function<void(std::int64_t, std::int64_t)>& rows);

}  // namespace draftgate::model
