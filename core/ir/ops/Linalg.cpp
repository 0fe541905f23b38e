// Det (opsets 11, 22): the determinant of each square matrix in the last two dims, by LU
// decomposition with partial pivoting in the compute type.

#include "OpUtil.h"

#include <cmath>

namespace sextant::ir {

using ops::opError;

Status verifyDet(const Node& n) { return ops::requireFloatInput(n, 0, "det input"); }

Expected<std::vector<TensorType>> inferDet(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (x->rank() < 2)
        return opError(n, "det input must have rank >= 2 ([*, M, M]), got " + x->str());
    const Dim& rows = x->shape[x->rank() - 2];
    const Dim& cols = x->shape[x->rank() - 1];
    if (rows.isKnown() && cols.isKnown() && rows.value != cols.value)
        return opError(n, "det input " + x->str() + " is not square in its last two dims");
    TensorType y;
    y.dtype = x->dtype;
    y.shape.assign(x->shape.begin(), x->shape.end() - 2);
    return std::vector<TensorType>{y};
}

Expected<std::vector<Tensor>> runDet(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() < 2 || x.shape()[x.rank() - 1] != x.shape()[x.rank() - 2])
        return opError(n, "det input " + x.type().str() + " is not [*, M, M]");
    const int64_t m = x.shape().back();
    std::vector<int64_t> outShape(x.shape().begin(), x.shape().end() - 2);
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), outShape);
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        std::vector<T> a(static_cast<size_t>(m * m));
        for (int64_t b = 0; b < y.numel(); ++b) {
            std::copy(src + b * m * m, src + (b + 1) * m * m, a.begin());
            T det = 1;
            for (int64_t c = 0; c < m && det != T(0); ++c) {
                // The largest remaining entry of column c as the pivot.
                int64_t pivot = c;
                for (int64_t r = c + 1; r < m; ++r)
                    if (std::abs(a[static_cast<size_t>(r * m + c)]) > std::abs(a[static_cast<size_t>(pivot * m + c)]))
                        pivot = r;
                const T p = a[static_cast<size_t>(pivot * m + c)];
                if (p == T(0)) {
                    det = 0;
                    break;
                }
                if (pivot != c) {
                    for (int64_t k = 0; k < m; ++k)
                        std::swap(a[static_cast<size_t>(c * m + k)], a[static_cast<size_t>(pivot * m + k)]);
                    det = -det;
                }
                det *= p;
                for (int64_t r = c + 1; r < m; ++r) {
                    const T f = a[static_cast<size_t>(r * m + c)] / p;
                    for (int64_t k = c + 1; k < m; ++k)
                        a[static_cast<size_t>(r * m + k)] -= f * a[static_cast<size_t>(c * m + k)];
                }
            }
            dst[b] = det;
        }
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir
