#pragma once
// Freeing and re-allocating a tensor's storage in place, as FSDP does with
// `untyped_storage().resize_(0)` / `resize_(n)`: every tensor and view on the
// storage (the module's parameters, the tensors autograd saved in forward)
// keeps pointing at the same StorageImpl and sees the new memory once it is
// re-allocated and filled. StorageImpl's set_data_ptr_noswap / set_nbytes /
// allocator() are the same in LibTorch 1.13 and 2.x.
#include <cstddef>

#include <ATen/core/Tensor.h>
#include <c10/core/StorageImpl.h>

namespace dtbench::compat {

inline void free_storage(const at::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(c10::DataPtr(nullptr, s->device()));
  s->set_nbytes(0);
}

inline void allocate_storage(const at::Tensor& t, std::size_t nbytes) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(s->allocator()->allocate(nbytes));
  s->set_nbytes(nbytes);
}

inline std::size_t storage_bytes(const at::Tensor& t) { return t.storage().nbytes(); }

}  // namespace dtbench::compat
