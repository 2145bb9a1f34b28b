// simd/amx.hpp — what Isa::amx kernels share: the tile configuration. AMX has eight tile
// registers (tmm0-7) of up to 16 rows of 64 bytes each, shaped by a 64-byte configuration
// that each thread loads (ldtilecfg) before its first tile instruction and drops (tilerelease)
// when done, so that its context switches stop saving 8 KiB of tiles (Intel SDM vol. 1, 3.x
// "Intel AMX"; Intel Optimization Reference Manual, "Intel AMX"). Tile instructions take the
// register number as an immediate, so kernels name tiles by constant.
// Used only where kernel_isa() says amx (isa.hpp), which needs FASTBENCH_AMX_BUILT.
// x86-64 only; no Python here.
#pragma once

#include "../isa.hpp"

#if FASTBENCH_AMX_BUILT

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace fastbench::detail {

// Palette 1: every tile 16 rows × 64 bytes, the shape every kernel here uses (a float32
// accumulator tile of 16×16, a bf16 operand of 16×32, an int8 operand of 16×64).
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// Loads the full-size shape into all eight tiles of the calling thread; its destructor
// releases them, however the scope is left. A thread's tile configuration belongs to it
// alone, and code run between two kernel calls (another library's) may change it: every
// kernel call configures on entry.
class TileScope {
 public:
  __attribute__((target("amx-tile"))) TileScope() {
    TileConfig cfg;
    for (int t = 0; t < 8; ++t) {
      cfg.colsb[t] = 64;
      cfg.rows[t] = 16;
    }
    // Not _tile_loadconfig: GCC 12 does not count its pointer as a read, dropped the stores
    // above and loaded a configuration of zero rows (every tile instruction then faults).
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
  }
  __attribute__((target("amx-tile"))) ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

}  // namespace fastbench::detail

#endif  // FASTBENCH_AMX_BUILT
