package ztensor

import (
	"reflect"
	"unsafe"
)

// Number is the Go types that match a storage dtype: int8..int64 ("i8" ..
// "i64"), uint8..uint64 ("u8" .. "u64"), float32 ("f32"), float64 ("f64").
// f16 and bf16 elements are uint16 bit patterns, bool elements uint8.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// dtypeWidth is the byte width of a storage dtype, 0 if unknown.
func dtypeWidth(dtype string) int {
	switch dtype {
	case "f64", "i64", "u64":
		return 8
	case "f32", "i32", "u32":
		return 4
	case "f16", "bf16", "i16", "u16":
		return 2
	case "i8", "u8", "bool":
		return 1
	}
	return 0
}

// DtypeOf is the storage dtype of T: "f32" for float32, "i64" for int64, ...
func DtypeOf[T Number]() string {
	var zero T
	switch reflect.TypeOf(zero).Kind() {
	case reflect.Int8:
		return "i8"
	case reflect.Int16:
		return "i16"
	case reflect.Int32:
		return "i32"
	case reflect.Int64:
		return "i64"
	case reflect.Uint8:
		return "u8"
	case reflect.Uint16:
		return "u16"
	case reflect.Uint32:
		return "u32"
	case reflect.Uint64:
		return "u64"
	case reflect.Float32:
		return "f32"
	default:
		return "f64"
	}
}

// littleEndian: the files store little-endian elements, which Elements and
// AsBytes reinterpret in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Elements reinterprets little-endian bytes (from Component.Bytes, a view,
// ReadInto) as elements of T, WITHOUT A COPY: the result shares the bytes'
// memory and lifetime (for Bytes: until the Reader's Close). StatusArgument
// if the length is not whole elements or the data is not aligned for T;
// StatusUnsupported on a big-endian machine.
func Elements[T Number](b []byte) ([]T, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if !littleEndian {
		return nil, errorf(StatusUnsupported, "elements are little-endian and this machine is not")
	}
	if len(b)%size != 0 {
		return nil, errorf(StatusArgument, "%d bytes are not whole elements of %d bytes", len(b), size)
	}
	if len(b) == 0 {
		return []T{}, nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%unsafe.Alignof(zero) != 0 {
		return nil, errorf(StatusArgument, "data at %p is not aligned for %s", &b[0], DtypeOf[T]())
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size), nil
}

// AsBytes views numbers as their bytes, without a copy (for Writer calls,
// which take little-endian bytes). It panics on a big-endian machine,
// where the bytes would not be what a file stores.
func AsBytes[T Number](v []T) []byte {
	if !littleEndian {
		panic("ztensor.AsBytes: elements are little-endian and this machine is not")
	}
	if len(v) == 0 {
		return []byte{}
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(zero)))
}

// makeValues allocates n values for a converting call.
func makeValues[F float32 | float64](n uint64, what string) ([]F, error) {
	var zero F
	if n > maxLen/uint64(unsafe.Sizeof(zero)) {
		return nil, errorf(StatusLimit, "object %q: %d values do not fit in memory", what, n)
	}
	return make([]F, int(n)), nil
}

// sliceArg passes a slice's memory to C for the duration of a call.
func sliceArg[F float32 | float64](v []F) unsafe.Pointer {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Pointer(&v[0])
}
