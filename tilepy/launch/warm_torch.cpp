// The torch tensor reader of the C warm path (launch/warm.py builds it against the installed
// torch's own headers, where they are, and hands its address to warm.cpp). It reads what
// dispatch.signature reads of a torch.Tensor through its Python attributes (data_ptr(),
// dtype, shape, stride(), is_cpu/is_cuda/get_device(), is_neg()) from the TensorImpl itself,
// with none of those calls. Only dense strided CPU and CUDA tensors whose impl is exactly a
// c10::TensorImpl are read; anything else (sparse, quantized, nested, batched, functional,
// symbolic sizes, other devices, a __torch_function__ mode that would see the attribute
// reads) returns 0, and the call takes the attribute path or the Python path.
#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/core/TensorImpl.h>

#include <stdint.h>

#include <typeinfo>

namespace {
enum { MAX_DIMS = 32 };
}

// The layout warm.cpp reads (TorchFacts there).
struct TorchFacts {
    uint64_t ptr;
    int32_t ndim, scalar_type, device_kind, device_index, neg, pad;
    int64_t sizes[MAX_DIMS];
    int64_t strides[MAX_DIMS];
};

// 1: `impl` (a tensor's c10::TensorImpl) was read into `f`; 0: not a tensor read here.
extern "C" __attribute__((visibility("default"))) int tp_torch_facts(void *impl_ptr,
                                                                      TorchFacts *f) noexcept {
    try {
        auto *impl = static_cast<c10::TensorImpl *>(impl_ptr);
        if (!impl || typeid(*impl) != typeid(c10::TensorImpl)) return 0;
        if (impl->has_symbolic_sizes_strides() || impl->layout() != c10::kStrided) return 0;
        c10::DeviceType dt = impl->device_type();
        if (dt == c10::DeviceType::CPU) {
            f->device_kind = 1;
            f->device_index = -1;                 // (get_device() of a CPU tensor)
        } else if (dt == c10::DeviceType::CUDA) {
            f->device_kind = 2;
            f->device_index = impl->device().index();
        } else {
            return 0;
        }
        c10::IntArrayRef sizes = impl->sizes(), strides = impl->strides();
        if (sizes.size() > MAX_DIMS || strides.size() != sizes.size()) return 0;
        f->ndim = (int32_t)sizes.size();
        for (size_t d = 0; d < sizes.size(); d++) {
            f->sizes[d] = sizes[d];
            f->strides[d] = strides[d];
        }
        f->scalar_type = (int32_t)impl->dtype().toScalarType();
        f->neg = impl->is_neg();
        f->ptr = (uint64_t)(uintptr_t)impl->mutable_data();   // what Tensor.data_ptr() returns
        return 1;
    } catch (...) {
        return 0;
    }
}

// Is a __torch_function__ mode active (the attribute reads would go through it)?
extern "C" __attribute__((visibility("default"))) int tp_torch_function_mode() noexcept {
    try {
        return at::impl::torch_function_mode_enabled() ? 1 : 0;
    } catch (...) {
        return 1;
    }
}

extern "C" __attribute__((visibility("default"))) int tp_torch_facts_size() noexcept {
    return (int)sizeof(TorchFacts);
}
