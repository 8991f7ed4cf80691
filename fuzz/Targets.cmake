# The sources of the fuzz targets' entry functions (fuzz/FuzzTargets.h),
# shared by the libFuzzer executables (fuzz/CMakeLists.txt) and the
# regression test that replays their inputs (tests/CMakeLists.txt).
set(SOLDER_FUZZ_SOURCES
  ${CMAKE_SOURCE_DIR}/fuzz/FuzzTargets.cpp
  ${CMAKE_SOURCE_DIR}/fuzz/OnnxImportTarget.cpp
  ${CMAKE_SOURCE_DIR}/fuzz/IrParserTarget.cpp
  ${CMAKE_SOURCE_DIR}/fuzz/TensorTargets.cpp
  # The .npy reader is CLI code.
  ${CMAKE_SOURCE_DIR}/tools/TensorIO.cpp)
set(SOLDER_FUZZ_TARGETS onnx_import ir_parser npy tensor_proto)
if(TARGET solder_runtime)
  list(APPEND SOLDER_FUZZ_SOURCES ${CMAKE_SOURCE_DIR}/fuzz/PlanFileTarget.cpp)
  list(APPEND SOLDER_FUZZ_TARGETS plan_file)
endif()
