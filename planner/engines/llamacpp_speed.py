"""llama.cpp's measured speed facts: achieved bandwidth shares, fixed costs per forward and weight-format factors.

Why its own module: each figure is a fit on published decodes, with the fit beside it; the engine's home
(engines/llamacpp.py) reads them as it reads every other fact, and stays a size one can read.
"""

from __future__ import annotations

HBM_SOURCE = ("llama.cpp on HBM GPUs (XiongjieDai/GPU-Benchmarks-on-LLM-Inference, llama-bench tg512 May 2024: "
              "8B and 70B Q4_K_M on H100 PCIe, A100 SXM4, A100 PCIe)")
# Metal k-quants: one factor for every Apple class (the Ultra fits below are on Q4_K_M and take it as given)
METAL_KQUANT = (0.90, "llama.cpp Metal k-quants: draftbench M4 Max Q4_K_M baselines 46.6 (14B) and 9.35 (72B) "
                      "tok/s, 0.90 of the 0.85 share's")
AMD_SOURCE = ("llama.cpp on AMD GPUs (ROCm/HIP: the CUDA kernels compiled for gfx1100): RX 7900 XTX tg128 of Llama-2-7B "
              "Q4_0 ~129-144 t/s with March 2026 builds (ggml-org/llama.cpp issue #20934; 136.5 taken) and tg64 of "
              "Llama-3-8B Q4_K_M 105.75 t/s (PR #26284), on the bytes this roofline streams")
ULTRA_SOURCE = ("llama.cpp on the two-die Apple Ultras: batch-1 decode of Llama-3.2-3B and Llama-3.1-70B Q4_K_M "
                "(geerlingguy/ai-benchmarks README, llama.cpp build 7825: M1 Ultra 127.6 / 9.84, M3 Ultra 154.6 / 14.1 "
                "tok/s) fitted as t = bytes / (share x 0.90 x peak) + fixed on the bytes this roofline reads (1.87 "
                "and 39.27 GB); held against llama.cpp discussion #4167 (build 8e672ef, Llama-2-7B F16/Q8_0/Q4_0 on "
                "six Ultras: predicted / measured median 0.99; 1.47 with the single-die share and no fixed cost)")

# datacenter GPUs on HBM: batch-1 decode of 8B and 70B Q4_K_M on one GPU (llama-bench tg512, builds
# b2824-b2843, May 2024) lies on t = bytes / (share x peak) + a fixed cost per forward, with the bytes this
# roofline reads (4.29 and 39.27 GB): H100 PCIe 145.55 / 25.03 t/s -> 2.81 ms, A100 SXM4 135.04 / 24.61 ->
# 3.33 ms, A100 PCIe 140.62 / 22.31 -> 2.49 ms (the Dec 2023 ./main figures of the same repository show
# the same shape); the median, 2.81 ms, taken. It is host work per llama_decode (graph build, scheduling,
# sampling): every draft step pays it as well.
FORWARD_OVERHEAD_BY_KIND = {
    "gpu-hbm": ((2.81e-3, 0.0), HBM_SOURCE + ": fixed cost per forward 2.49-3.33 ms, 2.81 ms taken"),
    # two-die Ultras: the fits of ULTRA_SOURCE; per forward, so every draft step pays it too
    "apple-ultra": ((3.21e-3, 0.0), ULTRA_SOURCE + ": fixed cost per forward 3.17 ms (M1 Ultra) and 3.26 ms "
                                                   "(M3 Ultra), 3.21 ms taken"),
}

# the k-quants' mat-vec kernels (multi-level scales unpacked per block) stream below the others: on GDDR
# GPUs ten published Q4_K_M decodes imply 0.56-0.71 of peak, median 0.611 = 0.777 x the 0.786 share
# (RTX 3090/4090/5090, L40S; docs/speed.md); on Metal the draftbench M4 Max Q4_K_M baselines (14B 46.6,
# 72B 9.35 tok/s) sit at 0.90 of what the 0.85 share gives, where its F16/Q8_0 ones sit at 1.0
FORMAT_SHARE = {
    "gpu": {"kquant": (0.777, "llama.cpp CUDA k-quant mat-vec: 0.56-0.71 of peak in ten published Q4_K_M decodes "
                              "(median 0.611 = 0.777 x the GPU share; docs/speed.md)")},
    "gpu-amd": {"kquant": (0.843, AMD_SOURCE + ": Q4_K_M streams at 0.843 of the Q4_0 share")},
    "apple": {"kquant": METAL_KQUANT},
    "apple-ultra": {"kquant": METAL_KQUANT},
}

BANDWIDTH_EFFICIENCY = {
    # achieved / peak bytes per second of batch-1 decode, implied by 16 published llama.cpp decodes on GDDR
    # GPUs (2024-2026 builds, docs/speed.md): F16 / Q8_0 / Q4_0 0.74-0.89 (RTX 3060 Q8_0 #5877, RTX 3090
    # Q8_0 openclawradar, RTX 4090 Q4_0 PR #20586, RTX 3090/4090 F16 XiongjieDai), k-quants 0.56-0.71
    "gpu": (0.786, "llama.cpp CUDA decode on GDDR GPUs: F16/Q8_0/Q4_0 weights stream at 0.74-0.89 of peak "
                   "(median of six published decodes, docs/speed.md): 0.786 taken"),
    # HBM (datacenter) GPUs: the same two-point fits: H100 PCIe 0.529, A100 SXM4 0.516, A100 PCIe 0.479 of
    # peak, for every format (F16 on the same GPUs: 0.91-1.18 of the prediction); NVIDIA's engineers note the
    # mat-vec kernels leave large headroom on HBM (llama.cpp issue #9817)
    "gpu-hbm": (0.516, HBM_SOURCE + ": streaming share 0.479-0.529 of peak, 0.516 taken"),
    # AMD (HIP): the Q4_0 decode implies 0.581 of peak on a 7900 XTX; older builds stream lower (W7900 Q4_0 Dec
    # 2024 and May 2025, 7900 XTX Jan 2024: 0.46-0.52), and the Vulkan backend higher (same issue: ~167-177 t/s)
    "gpu-amd": (0.581, AMD_SOURCE + ": Q4_0 (and F16/Q8_0, not measured apart) stream at 0.581 of peak"),
    # Metal: M4 Max 14B Q8_0 30.03 t/s x 15.7 GB = 0.86, FP16 16.82 t/s x 29.5 GB = 0.91 of 546 GB/s
    # (draftbench, February 2026)
    "apple": (0.85, "llama.cpp Metal decode reaches 0.86-0.91 of peak bandwidth (draftbench, M4 Max): 0.85 taken"),
    # two-die Ultras: geerlingguy's Q4_K_M decodes of 3B and 70B lie on t = bytes / (share x 0.90 x peak) + a
    # fixed cost per forward: M1 Ultra 0.554 / 3.17 ms, M3 Ultra 0.787 / 3.26 ms
    "apple-ultra": (0.670, ULTRA_SOURCE + ": streaming share 0.554 (M1 Ultra) and 0.787 (M3 Ultra) of peak, "
                                          "0.670 taken"),
    "cpu": (1.0, "CPU bandwidth is the measured copy bandwidth or the catalogued figure; matmul compute is "
                 "derated separately (CPU_MATMUL_EFFICIENCY)"),
}
