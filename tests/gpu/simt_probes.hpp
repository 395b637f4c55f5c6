// Kernels that record what each warp-level instruction of the dialect gives each lane, on inputs
// that every order of summation represents exactly, so that the GPU and the kernel interpreter
// must agree bit for bit: simt_hardware_check runs them on both and names the first lane and
// register that differ. Each kernel is one warp; out is (32 lanes, kSlots) 32-bit words.
#pragma once

#include <cstdint>

#include "kernels/simt/simt.hpp"

namespace eth::test::simt_probes {

namespace simt = kernels::simt;
using simt::Global;
using simt::Thread;

constexpr int kSlots = 32;  // words recorded per lane

SIMT_DEVICE uint32_t bits_of(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

// Shuffles of every kind and the votes.
struct ShuffleProbe {
  static constexpr const char* kName = "shuffle_probe";
  Global<uint32_t> out;  // (32, kSlots)
  SIMT_DEVICE void operator()(Thread& t) const {
    const int lane = t.lane();
    const float v = 0.5f + static_cast<float>(lane) * 1.25f;
    const double d = 1.0 + lane * 0.125;
    Global<uint32_t> o = out + static_cast<size_t>(lane) * kSlots;
    int k = 0;
    for (int m = 1; m < 32; m *= 2) o[k++] = bits_of(t.shfl_xor(simt::kFullMask, v, m));
    o[k++] = bits_of(t.shfl_down(simt::kFullMask, v, 3));
    o[k++] = bits_of(t.shfl_up(simt::kFullMask, v, 5));
    o[k++] = bits_of(t.shfl_idx(simt::kFullMask, v, 7));
    const double dx = t.shfl_xor(simt::kFullMask, d, 9);
    uint64_t db;
    memcpy(&db, &dx, sizeof db);
    o[k++] = static_cast<uint32_t>(db);
    o[k++] = static_cast<uint32_t>(db >> 32);
    o[k++] = t.ballot(simt::kFullMask, lane % 3 == 1);
    o[k++] = t.any(simt::kFullMask, lane == 17);
    o[k++] = t.all(simt::kFullMask, lane != 31);
    const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    o[k++] = bits_of(t.shfl_xor(half, v, 4));
  }
};

// mma.m16n8k16 on E = bf16 or fp16 with each lane's registers a function of (lane, register),
// not of a layout: a wrong fragment layout in the interpreter cannot cancel out. Values are
// multiples of 1/4 in [-4, 4], exact in both types: products are multiples of 1/16 below 16 in
// magnitude, sums of 16 of them exact in fp32.
template <class E>
struct MmaProbe {
  static constexpr const char* kName = simt::named<E>("", "mma_probe_bf16", "mma_probe_fp16");
  Global<uint32_t> out;  // (32, kSlots): d0..d3 of two chained mma
  SIMT_DEVICE static float value(int lane, int reg, int salt) {
    return static_cast<float>(((lane * 7 + reg * 13 + salt * 5) % 33) - 16) * 0.25f;
  }
  SIMT_DEVICE void operator()(Thread& t) const {
    const int lane = t.lane();
    uint32_t a[4], b[2];
    float c[4], d[4], e[4];
    for (int r = 0; r < 4; r++) a[r] = simt::pack2<E>(value(lane, 2 * r, 1), value(lane, 2 * r + 1, 1));
    for (int r = 0; r < 2; r++) b[r] = simt::pack2<E>(value(lane, 2 * r, 2), value(lane, 2 * r + 1, 2));
    for (int r = 0; r < 4; r++) c[r] = value(lane, r, 3) * 4.f;
    t.mma_16816<E>(d, a, b, c);
    t.mma_16816<E>(e, a, b, d);  // D fed back as C: the accumulator's layout in and out
    Global<uint32_t> o = out + static_cast<size_t>(lane) * kSlots;
    for (int r = 0; r < 4; r++) {
      o[r] = bits_of(d[r]);
      o[4 + r] = bits_of(e[r]);
    }
  }
};

// ldmatrix x1, x2, x4, each plain and .trans, from a (32, 8) tile of 16-bit words whose value is
// their index: every register names the two elements it received.
struct LdmatrixProbe {
  static constexpr const char* kName = "ldmatrix_probe";
  struct Smem {
    alignas(16) simt::SharedArray2D<uint16_t, 32, 8> tile;
  };
  Global<uint32_t> out;  // (32, kSlots)
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int lane = t.lane();
    for (int c = 0; c < 8; c++) s.tile(lane, c) = static_cast<uint16_t>(lane * 8 + c);
    t.sync();
    const void* row = &s.tile(lane, 0);  // lane l gives row l (matrix l / 8, its row l % 8)
    uint32_t r1[1], r2[2], r4[4], t1[1], t2[2], t4[4];
    t.ldmatrix<1>(r1, row);
    t.ldmatrix<2>(r2, row);
    t.ldmatrix<4>(r4, row);
    t.ldmatrix<1, true>(t1, row);
    t.ldmatrix<2, true>(t2, row);
    t.ldmatrix<4, true>(t4, row);
    Global<uint32_t> o = out + static_cast<size_t>(lane) * kSlots;
    int k = 0;
    o[k++] = r1[0];
    for (uint32_t x : r2) o[k++] = x;
    for (uint32_t x : r4) o[k++] = x;
    o[k++] = t1[0];
    for (uint32_t x : t2) o[k++] = x;
    for (uint32_t x : t4) o[k++] = x;
  }
};

// cp.async of 4, 8 and 16 bytes in three commit groups, read after wait_group 0.
struct CpAsyncProbe {
  static constexpr const char* kName = "cp_async_probe";
  struct Smem {
    alignas(16) simt::SharedArray2D<uint32_t, 32, 8> words;
  };
  Global<uint32_t> out;         // (32, kSlots)
  Global<const uint32_t> src;  // (32, 8)
  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int lane = t.lane();
    const uint32_t* from = src.get() + static_cast<size_t>(lane) * 8;
    t.cp_async<4>(&s.words(lane, 0), from);
    t.cp_async_commit();
    t.cp_async<8>(&s.words(lane, 2), from + 2);
    t.cp_async_commit();
    t.cp_async<16>(&s.words(lane, 4), from + 4);
    t.cp_async_commit();
    t.cp_async_wait<0>();
    Global<uint32_t> o = out + static_cast<size_t>(lane) * kSlots;
    o[0] = s.words(lane, 0);
    for (int c = 2; c < 8; c++) o[c - 1] = s.words(lane, c);
  }
};

}  // namespace eth::test::simt_probes
