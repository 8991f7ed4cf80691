//===- TensorIO.h - Tensors from and to files -------------------*- C++ -*-===//
//
// Reads and writes host tensors as numpy `.npy` files (format versions 1.0,
// 2.0 and 3.0 on read; 1.0, or 2.0 when the header needs it, on write;
// C order only) and as serialized onnx.TensorProto `.pb` files (the ONNX
// test-data format). The format is chosen by the file extension.
//
// bf16 has no numpy dtype: it is written as raw bits under '<u2' (callers
// print a note, see npyStoresAsRawBits), and a '<u2' file reads back as u16.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_TENSORIO_H
#define SOLDER_TOOLS_TENSORIO_H

#include "ir/Tensor.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace solder {

/// Parses the bytes of a .npy file. Name is used in messages only.
llvm::Expected<Tensor> parseNpy(llvm::StringRef Bytes, llvm::StringRef Name);
/// The bytes of a .npy file holding T.
std::string serializeNpy(const Tensor &T);
/// True when T's dtype has no numpy equivalent and is stored as raw bits.
bool npyStoresAsRawBits(DType T);

llvm::Expected<Tensor> readNpyFile(llvm::StringRef Path);
llvm::Error writeNpyFile(llvm::StringRef Path, const Tensor &T);
/// Writes Bytes to Path through a temporary file renamed into place, so a
/// failed or interrupted write leaves no half-written file.
llvm::Error writeFileAtomically(llvm::StringRef Path, llvm::StringRef Bytes);

/// Reads a .npy or .pb file (by extension).
llvm::Expected<Tensor> readTensorFile(llvm::StringRef Path);
/// Writes a .npy or .pb file (by extension) atomically: the data goes to a
/// temporary file in the same folder that is then renamed over Path, so a
/// reader never sees a half-written file.
llvm::Error writeTensorFile(llvm::StringRef Path, const Tensor &T,
                            llvm::StringRef Name = "");

/// A file-name component derived from a tensor name: characters outside
/// [A-Za-z0-9._-] become '_', and names that are empty, "." or ".." or
/// start with '.' get a '_' prefix, so the result never leaves the folder.
std::string sanitizeFileName(llvm::StringRef Name);

} // namespace solder

#endif
