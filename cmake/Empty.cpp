//===- Empty.cpp - libsolder.so's own translation unit --------------------===//
//
// libsolder.so is the component libraries linked whole (cmake/CMakeLists.txt);
// a shared library target needs one source of its own.
//
//===----------------------------------------------------------------------===//
