{
  "variables": {
    "openblas_path%": "<!(node native/detect-openblas.mjs)"
  },
  "targets": [
    {
      "target_name": "lever_native",
      "sources": ["native/lever_native.cc", "native/gemm.cc", "native/pool_topk.cc"],
      "cflags_cc": ["-O3", "-std=gnu++17"],
      "defines": ["LEVER_OPENBLAS_PATH=\"<(openblas_path)\""],
      "libraries": ["-ldl"],
      "xcode_settings": {
        "OTHER_CPLUSPLUSFLAGS": ["-O3", "-std=gnu++17"]
      }
    }
  ]
}
