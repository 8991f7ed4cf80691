//===- Printer.h - Textual form of solder's IR ------------------*- C++ -*-===//
//
// Prints a Graph in solder's textual IR. The output is deterministic and
// parseGraph (ir/Parser.h) rebuilds an identical graph from it: value and
// node names, types, attributes and constant bytes round-trip bit-exactly,
// so print -> parse -> print gives the same bytes.
//
//   graph "main_graph" opset 17 {
//     input %x : f32[N,3,96,96]
//     const %w : f32[2,2] = [1.0, 2.5, -3.0, 4e-05]
//     const %big : f32[64,3,3,3] = hex"0000803f..."
//     %y = Conv(%x, %w, none) {group = 1, strides = [2, 2]} : f32[N,16,48,48]
//     @"conv1" output %y
//   }
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_PRINTER_H
#define SOLDER_IR_PRINTER_H

#include "ir/Graph.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace llvm {
class raw_ostream;
}

namespace solder {

struct PrintOptions {
  /// Print constants (and tensor attributes) with more than
  /// ElideThresholdElements elements as `elided` instead of their bytes. The
  /// result is for reading only: the parser rejects elided constants.
  bool ElideLargeConstants = false;
  /// Up to this many elements, constant data is printed as a readable list;
  /// above it, as raw little-endian bytes in hex (or elided).
  unsigned ElideThresholdElements = 16;
};

void printGraph(llvm::raw_ostream &OS, const Graph &G,
                const PrintOptions &Opts = {});
std::string graphToString(const Graph &G, const PrintOptions &Opts = {});

/// One node as its line in a graph (without indentation or newline; a body
/// graph, if any, is printed after it). For debugging and messages.
void printNode(llvm::raw_ostream &OS, const Node &N,
               const PrintOptions &Opts = {});
std::string nodeToString(const Node &N, const PrintOptions &Opts = {});

/// `%name`, or `%"..."` when the name is not made of [A-Za-z0-9_.].
void printValueName(llvm::raw_ostream &OS, llvm::StringRef Name);
/// A C-style quoted string: \" \\ \n \t, other bytes outside printable
/// ASCII as \xNN.
void printQuotedString(llvm::raw_ostream &OS, llvm::StringRef S);
/// Like printType, but symbols that are not identifiers are quoted so the
/// parser can read them back.
void printParsableType(llvm::raw_ostream &OS, const TensorType &T);

/// Shortest decimal forms that parse back to exactly the same bits; always
/// with a decimal point or an exponent (`1.0`, `2.5e-07`), or inf, -inf,
/// nan.
std::string formatFloat(float F);
std::string formatDouble(double D);
std::string formatHalf(uint16_t H);
std::string formatBF16(uint16_t B);

} // namespace solder

#endif
