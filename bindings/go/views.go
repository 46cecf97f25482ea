package ztensor

/*
#include <ztensor.h>
*/
import "C"

import (
	"unsafe"
)

// The views below hand out the reader's memory WITHOUT A COPY, like
// Component.Bytes: the file mapping for raw little-endian data, else the
// reader's decode cache (decoded once, on first use). Every []byte of a
// view is valid, unchanged, until the Reader is closed and must not be used
// after Close; it is not Go memory and must not be written. Elements
// reinterprets it as numbers. Mapped data starts at a multiple of 64 bytes
// from the start of the file, so it is aligned for its dtype.

// DenseView is a dense object at a glance (zt_dense_view).
type DenseView struct {
	ZeroCopy bool     // Data points into the file mapping (else into the decode cache)
	Shape    []uint64 // the object's shape (a copy)
	Elements uint64   // product(Shape)
	// Values counts storage elements: Elements x 2 for complex,
	// ceil(Elements / 2) bytes for f4_e2m1, else Elements.
	Values uint64
	Dtype  string // storage dtype of the elements
	Type   string // logical type ("f8_e4m3fn", "complex64", ...) or ""
	Data   []byte // Values little-endian elements of Dtype: reader memory, valid until Close
}

// CSRView is a sparse_csr object of shape [Rows, Cols] (zt_csr_view): row i
// holds Values[Indptr[i]:Indptr[i+1]] at columns Indices[...]. The
// structure was checked when the view was made (indptr monotonic from 0 to
// NNZ, every column < Cols), so it can be indexed without bounds checks.
type CSRView struct {
	ZeroCopy        bool // all three arrays point into the file mapping
	Rows, Cols, NNZ uint64
	Values          []byte // NNZ elements (x 2 storage elements for complex)
	ValuesDtype     string
	ValuesType      string // logical type or ""
	Indices         []byte // NNZ column indices
	IndicesDtype    string // "u64" in 1.2.0 files; any integer type in older ones
	Indptr          []byte // Rows + 1 row pointers
	IndptrDtype     string
}

// COOView is a sparse_coo object (zt_coo_view): entry k sits at
// (coords[0*NNZ+k], coords[1*NNZ+k], ..., coords[(ndim-1)*NNZ+k]). Checked
// when made: every coordinate lies within its dimension.
type COOView struct {
	ZeroCopy    bool
	Shape       []uint64 // the object's shape (a copy); ndim = len(Shape)
	NNZ         uint64
	Values      []byte // NNZ elements (x 2 storage elements for complex)
	ValuesDtype string
	ValuesType  string
	Coords      []byte // ndim x NNZ indices, all of dimension 0 first
	CoordsDtype string
}

// QuantView is a quantized_group (GPTQ-style) object (zt_quant_view); see
// ztensor.h for the layout. Its attributes and component sizes were checked
// when the view was made. DecodeFloat32 dequantises.
type QuantView struct {
	Bits          uint32
	GroupSize     uint64
	N             uint64 // output dimension: product of all but the last dimension
	K             uint64 // input dimension: the last dimension
	Groups        uint64 // ceil(K / GroupSize)
	ValuesPerWord uint32 // of "<vpe>_per_<dtype>"; 0 for "bitstream"
	Bitstream     bool
	ZerosPacked   bool // zeros are words packed along N
	ZeroCopy      bool

	PackedWeight      []byte
	PackedWeightCount uint64 // words
	PackedWeightDtype string
	Scales            []byte
	ScalesCount       uint64
	ScalesDtype       string
	Zeros             []byte
	ZerosCount        uint64
	ZerosDtype        string
	ZerosType         string
}

// storageBytes is the byte length of n elements of dtype with logical type
// typ: complex types have two storage elements an element, f4_e2m1 two
// values a byte.
func storageBytes(n uint64, dtype, typ string, what string) (uint64, error) {
	w := uint64(dtypeWidth(dtype))
	if w == 0 {
		return 0, errorf(StatusUnsupported, "%s: unknown dtype %q", what, dtype)
	}
	switch typ {
	case "complex64", "complex128":
		n *= 2
	case "f4_e2m1":
		return n/2 + n%2, nil
	}
	return n * w, nil
}

// viewBytes wraps a view's array of n elements.
func viewBytes(r *Reader, p unsafe.Pointer, n uint64, dtype, typ string, what string) ([]byte, error) {
	size, err := storageBytes(n, dtype, typ, what)
	if err != nil {
		return nil, err
	}
	return r.lend(p, size, what)
}

// Dense is the dense view of a dense object: its data without a copy
// (zstd data decoded into the reader's cache). StatusArgument for an
// object that is not dense.
func (o Object) Dense() (DenseView, error) {
	var v DenseView
	err := o.r.with(func(p *C.zt_reader) error {
		var info C.zt_dense_info
		C.zt_dense_info_init_sized(&info, C.sizeof_zt_dense_info)
		if err := call(func() C.zt_status { return C.zt_dense_view(p, C.size_t(o.Index), &info) }); err != nil {
			return err
		}
		data, err := o.r.lend(info.data, uint64(info.nbytes), o.what("data"))
		if err != nil {
			return err
		}
		v = DenseView{
			ZeroCopy: info.zero_copy != 0,
			Shape:    append([]uint64(nil), o.Shape...),
			Elements: uint64(info.elements),
			Values:   uint64(info.values),
			Dtype:    goString(info.dtype),
			Type:     goString(info._type),
			Data:     data,
		}
		return nil
	})
	return v, err
}

func (o Object) what(role string) string {
	return "object \"" + o.Name + "\": component \"" + role + "\""
}

// CSR is the view of a sparse_csr object, after checking its structure
// (linear in Rows + NNZ, on every call). StatusArgument for another format,
// StatusInvalid for a broken structure.
func (o Object) CSR() (CSRView, error) {
	var v CSRView
	err := o.r.with(func(p *C.zt_reader) (err error) {
		var info C.zt_csr_info
		C.zt_csr_info_init_sized(&info, C.sizeof_zt_csr_info)
		if err := call(func() C.zt_status { return C.zt_csr_view(p, C.size_t(o.Index), &info) }); err != nil {
			return err
		}
		v = CSRView{
			ZeroCopy:     info.zero_copy != 0,
			Rows:         uint64(info.rows),
			Cols:         uint64(info.cols),
			NNZ:          uint64(info.nnz),
			ValuesDtype:  goString(info.values_dtype),
			ValuesType:   goString(info.values_type),
			IndicesDtype: goString(info.indices_dtype),
			IndptrDtype:  goString(info.indptr_dtype),
		}
		if v.Values, err = viewBytes(o.r, info.values, v.NNZ, v.ValuesDtype, v.ValuesType, o.what("values")); err != nil {
			return err
		}
		if v.Indices, err = viewBytes(o.r, info.indices, v.NNZ, v.IndicesDtype, "", o.what("indices")); err != nil {
			return err
		}
		v.Indptr, err = viewBytes(o.r, info.indptr, v.Rows+1, v.IndptrDtype, "", o.what("indptr"))
		return err
	})
	return v, err
}

// COO is the view of a sparse_coo object, after checking its structure.
// Errors as for CSR.
func (o Object) COO() (COOView, error) {
	var v COOView
	err := o.r.with(func(p *C.zt_reader) (err error) {
		var info C.zt_coo_info
		C.zt_coo_info_init_sized(&info, C.sizeof_zt_coo_info)
		if err := call(func() C.zt_status { return C.zt_coo_view(p, C.size_t(o.Index), &info) }); err != nil {
			return err
		}
		v = COOView{
			ZeroCopy:    info.zero_copy != 0,
			Shape:       copyShape(info.shape, C.size_t(info.ndim)),
			NNZ:         uint64(info.nnz),
			ValuesDtype: goString(info.values_dtype),
			ValuesType:  goString(info.values_type),
			CoordsDtype: goString(info.coords_dtype),
		}
		if v.Values, err = viewBytes(o.r, info.values, v.NNZ, v.ValuesDtype, v.ValuesType, o.what("values")); err != nil {
			return err
		}
		v.Coords, err = viewBytes(o.r, info.coords, uint64(info.ndim)*v.NNZ, v.CoordsDtype, "", o.what("coords"))
		return err
	})
	return v, err
}

// Quant is the view of a quantized_group object, after checking its
// attributes and sizes. StatusUnsupported if bits, group_size or packing is
// missing, StatusInvalid for bad values.
func (o Object) Quant() (QuantView, error) {
	var v QuantView
	err := o.r.with(func(p *C.zt_reader) (err error) {
		var info C.zt_quant_info
		C.zt_quant_info_init_sized(&info, C.sizeof_zt_quant_info)
		if err := call(func() C.zt_status { return C.zt_quant_view(p, C.size_t(o.Index), &info) }); err != nil {
			return err
		}
		v = QuantView{
			Bits:              uint32(info.bits),
			GroupSize:         uint64(info.group_size),
			N:                 uint64(info.n),
			K:                 uint64(info.k),
			Groups:            uint64(info.groups),
			ValuesPerWord:     uint32(info.values_per_word),
			Bitstream:         info.bitstream != 0,
			ZerosPacked:       info.zeros_packed != 0,
			ZeroCopy:          info.zero_copy != 0,
			PackedWeightCount: uint64(info.packed_weight_count),
			PackedWeightDtype: goString(info.packed_weight_dtype),
			ScalesCount:       uint64(info.scales_count),
			ScalesDtype:       goString(info.scales_dtype),
			ZerosCount:        uint64(info.zeros_count),
			ZerosDtype:        goString(info.zeros_dtype),
			ZerosType:         goString(info.zeros_type),
		}
		if v.PackedWeight, err = viewBytes(o.r, info.packed_weight, v.PackedWeightCount, v.PackedWeightDtype, "", o.what("packed_weight")); err != nil {
			return err
		}
		if v.Scales, err = viewBytes(o.r, info.scales, v.ScalesCount, v.ScalesDtype, "", o.what("scales")); err != nil {
			return err
		}
		v.Zeros, err = viewBytes(o.r, info.zeros, v.ZerosCount, v.ZerosDtype, v.ZerosType, o.what("zeros"))
		return err
	})
	return v, err
}

// boxSize is the storage elements and width of a box of a dense object's
// data, for sizing a buffer; 0 for what the library will refuse (a bad
// range, an object that is not dense), so that its own error is reported.
func (o Object) boxSize(p *C.zt_reader, begin, end []uint64) (values, width uint64) {
	if o.Format != "dense" || len(begin) != len(o.Shape) || len(end) != len(o.Shape) {
		return 0, 0
	}
	var cs cstrings
	defer cs.free()
	role := cs.str("role", "data")
	dtype := goString(C.zt_component_dtype(p, C.size_t(o.Index), role))
	typ := goString(C.zt_component_type(p, C.size_t(o.Index), role))
	values = 1
	if typ == "complex64" || typ == "complex128" {
		values = 2
	}
	for d := range o.Shape {
		if begin[d] > end[d] || end[d] > o.Shape[d] {
			return 0, 0
		}
		values *= end[d] - begin[d] // within product(shape), checked at open
	}
	return values, uint64(dtypeWidth(dtype))
}

// rowBox is the box of rows [begin, end).
func (o Object) rowBox(begin, end uint64) (b, e []uint64) {
	if len(o.Shape) == 0 {
		return nil, nil
	}
	b = make([]uint64, len(o.Shape))
	e = append([]uint64(nil), o.Shape...)
	b[0], e[0] = begin, end
	return b, e
}

// DenseRowsMap is rows [begin, end) of a dense object's first dimension,
// WITHOUT A COPY (zt_dense_rows_map): a slice of the file mapping for raw
// data, of the reader's decode cache otherwise (the whole component is
// decoded once). Reader memory, valid until Close; see Component.Bytes.
func (o Object) DenseRowsMap(begin, end uint64) ([]byte, error) {
	var out []byte
	err := o.r.with(func(p *C.zt_reader) error {
		var data unsafe.Pointer
		var n C.uint64_t
		if err := call(func() C.zt_status {
			return C.zt_dense_rows_map(p, C.size_t(o.Index), C.uint64_t(begin), C.uint64_t(end), &data, &n)
		}); err != nil {
			return err
		}
		var err error
		out, err = o.r.lend(data, uint64(n), o.what("data"))
		return err
	})
	return out, err
}

// readBytes runs a byte-copying slice call into a new Go slice of
// values x width bytes.
func (o Object) readBytes(p *C.zt_reader, values, width uint64, read func(dst unsafe.Pointer, capacity C.uint64_t, written *C.uint64_t) C.zt_status) ([]byte, error) {
	if width != 0 && values > maxLen/width {
		return nil, errorf(StatusLimit, "object %q: %d elements do not fit in memory", o.Name, values)
	}
	if err := o.readRefusal(p); err != nil {
		return nil, err
	}
	buf := make([]byte, int(values*width))
	var written C.uint64_t
	ptr, capacity := bytesArg(buf)
	if err := call(func() C.zt_status { return read(ptr, capacity, &written) }); err != nil {
		return nil, err
	}
	return buf[:int(written)], nil
}

// DenseRows copies rows [begin, end) of a dense object's first dimension
// (zt_dense_rows): little-endian elements of its dtype, decoding only the
// zstd frames that cover them.
func (o Object) DenseRows(begin, end uint64) ([]byte, error) {
	var out []byte
	err := o.r.with(func(p *C.zt_reader) (err error) {
		b, e := o.rowBox(begin, end)
		values, width := o.boxSize(p, b, e)
		out, err = o.readBytes(p, values, width, func(dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
			return C.zt_dense_rows(p, C.size_t(o.Index), C.uint64_t(begin), C.uint64_t(end), dst, c, w)
		})
		return err
	})
	return out, err
}

// DenseSlice copies the box [begin[d], end[d]) of every dimension d of a
// dense object, row-major (zt_dense_slice): product(end - begin) elements,
// little-endian bytes of its dtype. begin and end have one entry per
// dimension (none for a scalar). Only the box is read: raw data run by run,
// zstd data written by this library frame by frame.
func (o Object) DenseSlice(begin, end []uint64) ([]byte, error) {
	if err := checkBox(begin, end); err != nil {
		return nil, err
	}
	var out []byte
	err := o.r.with(func(p *C.zt_reader) (err error) {
		values, width := o.boxSize(p, begin, end)
		out, err = o.readBytes(p, values, width, func(dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
			return o.slice(begin, end, func(nd C.size_t, b, e *C.uint64_t) C.zt_status {
				return C.zt_dense_slice(p, C.size_t(o.Index), nd, b, e, dst, c, w)
			})
		})
		return err
	})
	return out, err
}

// slice passes begin and end to f, which hands them to a slice call.
func (o Object) slice(begin, end []uint64, f func(nd C.size_t, b, e *C.uint64_t) C.zt_status) C.zt_status {
	b, nd := shapeArg(begin)
	e, _ := shapeArg(end)
	return f(nd, b, e)
}

func checkBox(begin, end []uint64) error {
	if len(begin) != len(end) {
		return errorf(StatusArgument, "begin has %d dimensions and end %d", len(begin), len(end))
	}
	return nil
}

// convertBox runs a converting row or slice call into a new slice of
// float32 or float64.
func convertBox[F float32 | float64](o Object, begin, end []uint64, read func(p *C.zt_reader, dst unsafe.Pointer, capacity C.uint64_t, written *C.uint64_t) C.zt_status) ([]F, error) {
	return fillValues[F](o, func(p *C.zt_reader) (uint64, error) {
		values, _ := o.boxSize(p, begin, end)
		return values, nil
	}, read)
}

// DenseRowsFloat32 is DenseRows converted to float32 (zt_dense_rows_f32).
func (o Object) DenseRowsFloat32(begin, end uint64) ([]float32, error) {
	b, e := o.rowBox(begin, end)
	return convertBox[float32](o, b, e, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_dense_rows_f32(p, C.size_t(o.Index), C.uint64_t(begin), C.uint64_t(end), (*C.float)(dst), c, w)
	})
}

// DenseRowsFloat64 is DenseRows converted to float64 (zt_dense_rows_f64).
func (o Object) DenseRowsFloat64(begin, end uint64) ([]float64, error) {
	b, e := o.rowBox(begin, end)
	return convertBox[float64](o, b, e, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return C.zt_dense_rows_f64(p, C.size_t(o.Index), C.uint64_t(begin), C.uint64_t(end), (*C.double)(dst), c, w)
	})
}

// DenseSliceFloat32 is DenseSlice converted to float32 (zt_dense_slice_f32).
func (o Object) DenseSliceFloat32(begin, end []uint64) ([]float32, error) {
	if err := checkBox(begin, end); err != nil {
		return nil, err
	}
	return convertBox[float32](o, begin, end, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return o.slice(begin, end, func(nd C.size_t, b, e *C.uint64_t) C.zt_status {
			return C.zt_dense_slice_f32(p, C.size_t(o.Index), nd, b, e, (*C.float)(dst), c, w)
		})
	})
}

// DenseSliceFloat64 is DenseSlice converted to float64 (zt_dense_slice_f64).
func (o Object) DenseSliceFloat64(begin, end []uint64) ([]float64, error) {
	if err := checkBox(begin, end); err != nil {
		return nil, err
	}
	return convertBox[float64](o, begin, end, func(p *C.zt_reader, dst unsafe.Pointer, c C.uint64_t, w *C.uint64_t) C.zt_status {
		return o.slice(begin, end, func(nd C.size_t, b, e *C.uint64_t) C.zt_status {
			return C.zt_dense_slice_f64(p, C.size_t(o.Index), nd, b, e, (*C.double)(dst), c, w)
		})
	})
}
