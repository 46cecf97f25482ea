// Typed views of decoded objects (issue 4): dtype conversion, sparse and
// quantized helpers. To be filled in.
#pragma once
