// Argument checks shared by the addon's N-API entry points: every bad argument becomes a
// RangeError that names the argument, never a crash.
#pragma once
#include <node_api.h>

#include <string>

namespace lever {

inline bool throw_error(napi_env env, const char* message) {
  napi_throw_range_error(env, nullptr, message);
  return false;
}

inline bool get_long(napi_env env, napi_value v, long* out, const char* name) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0) || d > 2147483647.0 ||
      d != static_cast<double>(static_cast<long>(d))) {
    const std::string msg = std::string(name) + " must be a non-negative 32-bit integer";
    return throw_error(env, msg.c_str());
  }
  *out = static_cast<long>(d);
  return true;
}

inline const char* typed_array_name(napi_typedarray_type type) {
  switch (type) {
    case napi_float32_array:
      return "a Float32Array";
    case napi_float64_array:
      return "a Float64Array";
    case napi_int32_array:
      return "an Int32Array";
    default:
      return "a typed array of another kind";
  }
}

template <typename T>
bool get_array(napi_env env, napi_value v, napi_typedarray_type want, T** data, long* length, const char* name) {
  bool is_typed = false;
  napi_is_typedarray(env, v, &is_typed);
  napi_typedarray_type type;
  size_t len;
  void* ptr;
  if (!is_typed || napi_get_typedarray_info(env, v, &type, &len, &ptr, nullptr, nullptr) != napi_ok || type != want) {
    const std::string msg = std::string(name) + " must be " + typed_array_name(want);
    return throw_error(env, msg.c_str());
  }
  *data = static_cast<T*>(ptr);
  *length = static_cast<long>(len);
  return true;
}

}  // namespace lever
