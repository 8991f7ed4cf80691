# The package_install test: installs the build into a fresh prefix, builds
# examples/ on its own against it (find_package(solder), solder::solder) as
# another project would, and runs the example on the bundled model. It must
# load the installed libsolder.so, compile the model, and then either run
# it (a GPU machine) or stop at "no CUDA device" (CI).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#         [-DPYTHON=python3] -P TestInstall.cmake
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR}
         --prefix ${prefix})
file(GLOB_RECURSE config ${prefix}/*/solderConfig.cmake)
file(GLOB_RECURSE lib ${prefix}/*/libsolder.so)
if(NOT EXISTS ${prefix}/include/solder/solder/Solder.h OR NOT config
   OR NOT lib)
  message(FATAL_ERROR "the prefix lacks Solder.h, solderConfig.cmake or "
                      "libsolder.so")
endif()

run_step("configure examples/ against the prefix" ${CMAKE_COMMAND}
         -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/build -G ${GENERATOR}
         -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run_step("build examples/" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)

# The Python package from the prefix, when the build has one.
if(PYTHON AND EXISTS ${BUILD_DIR}/python/solder)
  file(GLOB_RECURSE init ${prefix}/*/solder/__init__.py)
  if(NOT init)
    message(FATAL_ERROR "the prefix lacks the Python package")
  endif()
  get_filename_component(pkg ${init} DIRECTORY)
  get_filename_component(pkg_parent ${pkg} DIRECTORY)
  run_step("import solder from the prefix" ${CMAKE_COMMAND} -E env
           PYTHONPATH=${pkg_parent} ${PYTHON} -c
           "import solder, sys; sys.exit(not solder.__file__.startswith('${prefix}'))")
endif()

set(classify ${WORK_DIR}/build/classify)
execute_process(COMMAND ldd ${classify} OUTPUT_VARIABLE deps)
if(NOT deps MATCHES "libsolder\\.so[^\n]*${prefix}")
  message(FATAL_ERROR "classify does not load the installed libsolder.so:\n"
                      "${deps}")
endif()
execute_process(COMMAND ${classify} ${SOURCE_DIR}/examples/models/tiny_cnn.onnx
                        N=1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT out MATCHES "compiled: [0-9]+ steps")
  message(FATAL_ERROR "classify did not compile the model (${rc}):\n${out}\n"
                      "${err}")
endif()
if(rc EQUAL 0)
  message(STATUS "classify ran on the GPU:\n${out}")
elseif(err MATCHES "no CUDA device")
  message(STATUS "classify compiled the model; no GPU here: ${err}")
else()
  message(FATAL_ERROR "classify failed (${rc}):\n${out}\n${err}")
endif()
