// The typed-view calls of the C ABI: argument checks and translation of
// src/views/views.h results into the structs and statuses of ztensor.h.
#include <cstddef>
#include <cstring>
#include <span>
#include <string>

#include "capi_internal.h"
#include "formats/quantized_group_layout.h"
#include "views/views.h"

using namespace zt::capi;

namespace {

const char* dtype_text(zt::DType d) {
  return zt::dtype_name(d).data();
}
const char* type_text(const zt::Component& c) {
  return c.type ? c.type->c_str() : nullptr;
}

// A box's begin or end array (NULL with ndim 0 for a scalar).
std::span<const uint64_t> box_span(const uint64_t* p, size_t ndim) {
  return p ? std::span<const uint64_t>(p, ndim) : std::span<const uint64_t>();
}

// A converted read into a caller buffer of `capacity` values.
template <typename T, typename F>
zt_status read_values(const zt_reader* r, size_t object, T* dst, uint64_t capacity,
                      uint64_t* written, F&& call) {
  if (!written) return fail(ZT_ERR_ARGUMENT, "written is NULL");
  if (!dst && capacity > 0) return fail(ZT_ERR_ARGUMENT, "dst is NULL");
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    static T empty;
    auto n = call(std::span<T>(dst ? dst : &empty, dst ? static_cast<size_t>(capacity) : 0));
    if (!n) return set_error(n.error());
    *written = *n;
    return ZT_OK;
  });
}

// View structs: the caller's struct_size says how much of ours it has room for.
template <typename V>
zt_status check_struct(const V* v, size_t first_version_size) {
  if (!v) return fail(ZT_ERR_ARGUMENT, "view is NULL");
  if (v->struct_size < first_version_size)
    return fail(ZT_ERR_ARGUMENT,
                "view struct_size is smaller than any version of the struct (call its _init)");
  return ZT_OK;
}

template <typename V>
void copy_out(const V& full, V* v) {
  const uint32_t size = v->struct_size;
  std::memcpy(static_cast<void*>(v), &full, size < sizeof(V) ? size : sizeof(V));
  v->struct_size = size;
}

}  // namespace

extern "C" {

zt_status zt_object_element_count(const zt_reader* r, size_t object, uint64_t* count) {
  if (!count) return fail(ZT_ERR_ARGUMENT, "count is NULL");
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto n = zt::element_count(r->impl->manifest().objects[object]);
    if (!n) return set_error(n.error());
    *count = *n;
    return ZT_OK;
  });
}

zt_status zt_object_value_count(const zt_reader* r, size_t object, uint64_t* count) {
  if (!count) return fail(ZT_ERR_ARGUMENT, "count is NULL");
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto n = zt::decoded_value_count(*r->impl, object);
    if (!n) return set_error(n.error());
    *count = *n;
    return ZT_OK;
  });
}

zt_status zt_object_decode_capacity(const zt_reader* r, size_t object, size_t value_bytes,
                                    uint64_t* count) {
  if (!count) return fail(ZT_ERR_ARGUMENT, "count is NULL");
  if (value_bytes == 0) return fail(ZT_ERR_ARGUMENT, "value_bytes is 0");
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto n = zt::decode_capacity(*r->impl, object, value_bytes);
    if (!n) return set_error(n.error());
    *count = *n;
    return ZT_OK;
  });
}

zt_status zt_object_read_f32(const zt_reader* r, size_t object, float* dst, uint64_t capacity,
                             uint64_t* written) {
  return read_values(r, object, dst, capacity, written, [&](std::span<float> out) {
    return zt::read_dense_as(*r->impl, object, out);
  });
}

zt_status zt_object_read_f64(const zt_reader* r, size_t object, double* dst, uint64_t capacity,
                             uint64_t* written) {
  return read_values(r, object, dst, capacity, written, [&](std::span<double> out) {
    return zt::read_dense_as(*r->impl, object, out);
  });
}

zt_status zt_component_read_f32(const zt_reader* r, size_t object, const char* role, float* dst,
                                uint64_t capacity, uint64_t* written) {
  return read_values(r, object, dst, capacity, written,
                     [&](std::span<float> out) -> zt::Result<uint64_t> {
                       zt::Result<size_t> k = find_component(r, object, role);
                       if (!k) return std::move(k).error();
                       return zt::read_component_as(*r->impl, object, *k, out);
                     });
}

zt_status zt_component_read_f64(const zt_reader* r, size_t object, const char* role, double* dst,
                                uint64_t capacity, uint64_t* written) {
  return read_values(r, object, dst, capacity, written,
                     [&](std::span<double> out) -> zt::Result<uint64_t> {
                       zt::Result<size_t> k = find_component(r, object, role);
                       if (!k) return std::move(k).error();
                       return zt::read_component_as(*r->impl, object, *k, out);
                     });
}

zt_status zt_object_decode_f32(const zt_reader* r, size_t object, float* dst, uint64_t capacity,
                               uint64_t* written) {
  return read_values(r, object, dst, capacity, written, [&](std::span<float> out) {
    return zt::decode_object_as(*r->impl, object, out);
  });
}

zt_status zt_object_decode_f64(const zt_reader* r, size_t object, double* dst, uint64_t capacity,
                               uint64_t* written) {
  return read_values(r, object, dst, capacity, written, [&](std::span<double> out) {
    return zt::decode_object_as(*r->impl, object, out);
  });
}

void zt_dense_info_init_sized(zt_dense_info* v, size_t size) {
  init_sized(v, size, zt_dense_info{});
}
void zt_csr_info_init_sized(zt_csr_info* v, size_t size) {
  init_sized(v, size, zt_csr_info{});
}
void zt_coo_info_init_sized(zt_coo_info* v, size_t size) {
  init_sized(v, size, zt_coo_info{});
}
void zt_quant_info_init_sized(zt_quant_info* v, size_t size) {
  init_sized(v, size, zt_quant_info{});
}

zt_status zt_dense_view(const zt_reader* r, size_t object, zt_dense_info* v) {
  if (const zt_status s = check_struct(v, sizeof(zt_dense_info))) return s;
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto dv = zt::dense_view(*r->impl, object);
    if (!dv) return set_error(dv.error());
    zt_dense_info full{};
    full.zero_copy = dv->data.zero_copy;
    full.elements = dv->elements;
    full.values = dv->data.count;
    full.dtype = dtype_text(dv->data.component->dtype);
    full.type = type_text(*dv->data.component);
    full.data = dv->data.bytes.data();
    full.nbytes = dv->data.bytes.size();
    copy_out(full, v);
    return ZT_OK;
  });
}

zt_status zt_csr_view(const zt_reader* r, size_t object, zt_csr_info* v) {
  if (const zt_status s = check_struct(v, sizeof(zt_csr_info))) return s;
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto cv = zt::csr_view(*r->impl, object);
    if (!cv) return set_error(cv.error());
    zt_csr_info full{};
    full.zero_copy = cv->values.zero_copy && cv->indices.zero_copy && cv->indptr.zero_copy;
    full.rows = cv->rows;
    full.cols = cv->cols;
    full.nnz = cv->nnz;
    full.values = cv->values.bytes.data();
    full.values_dtype = dtype_text(cv->values.component->dtype);
    full.values_type = type_text(*cv->values.component);
    full.indices = cv->indices.bytes.data();
    full.indices_dtype = dtype_text(cv->indices.component->dtype);
    full.indptr = cv->indptr.bytes.data();
    full.indptr_dtype = dtype_text(cv->indptr.component->dtype);
    copy_out(full, v);
    return ZT_OK;
  });
}

zt_status zt_coo_view(const zt_reader* r, size_t object, zt_coo_info* v) {
  if (const zt_status s = check_struct(v, sizeof(zt_coo_info))) return s;
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto cv = zt::coo_view(*r->impl, object);
    if (!cv) return set_error(cv.error());
    zt_coo_info full{};
    full.zero_copy = cv->values.zero_copy && cv->coords.zero_copy;
    full.ndim = cv->shape.size();
    full.shape = cv->shape.data();
    full.nnz = cv->nnz;
    full.values = cv->values.bytes.data();
    full.values_dtype = dtype_text(cv->values.component->dtype);
    full.values_type = type_text(*cv->values.component);
    full.coords = cv->coords.bytes.data();
    full.coords_dtype = dtype_text(cv->coords.component->dtype);
    copy_out(full, v);
    return ZT_OK;
  });
}

zt_status zt_quant_view(const zt_reader* r, size_t object, zt_quant_info* v) {
  if (const zt_status s = check_struct(v, sizeof(zt_quant_info))) return s;
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto qv = zt::quant_view(*r->impl, object);
    if (!qv) return set_error(qv.error());
    const zt::QuantLayout& q = qv->layout;
    zt_quant_info full{};
    full.bits = q.bits;
    full.group_size = q.group_size;
    full.n = q.n;
    full.k = q.k;
    full.groups = q.groups;
    full.values_per_word = q.values_per_word;
    full.bitstream = q.bitstream;
    full.zeros_packed = qv->zeros_packed;
    full.zero_copy = qv->packed_weight.zero_copy && qv->scales.zero_copy && qv->zeros.zero_copy;
    full.packed_weight = qv->packed_weight.bytes.data();
    full.packed_weight_count = qv->packed_weight.count;
    full.packed_weight_dtype = dtype_text(qv->packed_weight.component->dtype);
    full.scales = qv->scales.bytes.data();
    full.scales_count = qv->scales.count;
    full.scales_dtype = dtype_text(qv->scales.component->dtype);
    full.zeros = qv->zeros.bytes.data();
    full.zeros_count = qv->zeros.count;
    full.zeros_dtype = dtype_text(qv->zeros.component->dtype);
    full.zeros_type = type_text(*qv->zeros.component);
    copy_out(full, v);
    return ZT_OK;
  });
}

zt_status zt_dense_rows_map(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                            const void** data, uint64_t* nbytes) {
  if (!data || !nbytes) return fail(ZT_ERR_ARGUMENT, "data or nbytes is NULL");
  return guard([&] {
    if (const zt_status s = to_status(check_object(r, object))) return s;
    auto m = zt::dense_rows_map(*r->impl, object, row_begin, row_end);
    if (!m) return set_error(m.error());
    *data = m->data();
    *nbytes = m->size();
    return ZT_OK;
  });
}

zt_status zt_dense_rows(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                        void* dst, uint64_t capacity, uint64_t* written) {
  return read_values(r, object, static_cast<uint8_t*>(dst), capacity, written,
                     [&](std::span<uint8_t> out) {
                       return zt::dense_rows(*r->impl, object, row_begin, row_end, out);
                     });
}

zt_status zt_dense_rows_f32(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                            float* dst, uint64_t capacity, uint64_t* written) {
  return read_values(r, object, dst, capacity, written, [&](std::span<float> out) {
    return zt::dense_rows_as(*r->impl, object, row_begin, row_end, out);
  });
}

zt_status zt_dense_rows_f64(const zt_reader* r, size_t object, uint64_t row_begin, uint64_t row_end,
                            double* dst, uint64_t capacity, uint64_t* written) {
  return read_values(r, object, dst, capacity, written, [&](std::span<double> out) {
    return zt::dense_rows_as(*r->impl, object, row_begin, row_end, out);
  });
}

zt_status zt_dense_slice(const zt_reader* r, size_t object, size_t ndim, const uint64_t* begin,
                         const uint64_t* end, void* dst, uint64_t capacity, uint64_t* written) {
  if (ndim > 0 && (!begin || !end)) return fail(ZT_ERR_ARGUMENT, "begin or end is NULL");
  return read_values(
      r, object, static_cast<uint8_t*>(dst), capacity, written, [&](std::span<uint8_t> out) {
        return zt::dense_slice(*r->impl, object, box_span(begin, ndim), box_span(end, ndim), out);
      });
}

zt_status zt_dense_slice_f32(const zt_reader* r, size_t object, size_t ndim, const uint64_t* begin,
                             const uint64_t* end, float* dst, uint64_t capacity,
                             uint64_t* written) {
  if (ndim > 0 && (!begin || !end)) return fail(ZT_ERR_ARGUMENT, "begin or end is NULL");
  return read_values(r, object, dst, capacity, written, [&](std::span<float> out) {
    return zt::dense_slice_as(*r->impl, object, box_span(begin, ndim), box_span(end, ndim), out);
  });
}

zt_status zt_dense_slice_f64(const zt_reader* r, size_t object, size_t ndim, const uint64_t* begin,
                             const uint64_t* end, double* dst, uint64_t capacity,
                             uint64_t* written) {
  if (ndim > 0 && (!begin || !end)) return fail(ZT_ERR_ARGUMENT, "begin or end is NULL");
  return read_values(r, object, dst, capacity, written, [&](std::span<double> out) {
    return zt::dense_slice_as(*r->impl, object, box_span(begin, ndim), box_span(end, ndim), out);
  });
}

}  // extern "C"
