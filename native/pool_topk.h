// Per-row running top-k screening of a block of similarity scores (the scan half of exact
// cosine pool search; see src/pools/search.ts). Registered by lever_native.cc as "topkScan".
#pragma once

#include <node_api.h>

namespace lever {

napi_value TopkScan(napi_env env, napi_callback_info info);

}  // namespace lever
