// ztensor.hpp must compile first and alone (it includes everything it
// needs), under -pedantic with every warning an error.
#include <ztensor.hpp>

// Something to compile against: the concepts and a class.
static_assert(sizeof(ztensor::Error) > 0);
static_assert(ztensor::Element<float> && !ztensor::Element<bool> && !ztensor::Element<char>);
static_assert(ztensor::Readable<std::complex<double>> && !ztensor::Readable<std::complex<int>>);

// The library's C++ core declares these in `zt`. If the wrapper had put its
// classes there, or made `zt` an alias of its namespace, these declarations
// would not compile: the two can never collide in one program.
namespace zt {
class Reader;
class Writer;
class Error;
}  // namespace zt
