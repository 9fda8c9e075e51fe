# The installed package in use: `cmake --install` of the build into a fresh prefix, then the
# project in this folder (outside Safhire's tree: it sees only the prefix) configured with
# find_package(Safhire), built, and its programs run, each result checked.
# Usage: cmake -DBUILD=<Safhire build dir> -DSOURCE=<this folder> -DEXAMPLES=<examples dir>
#              -DWORK=<scratch dir> -P check.cmake
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} exited with ${rc}:\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${WORK}/prefix -DSAFHIRE_EXAMPLES=${EXAMPLES})
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/ckks_basics --test)
if(NOT out MATCHES "largest error .* \\(ok\\)")
  message(FATAL_ERROR "ckks_basics built against the installed package: ${out}")
endif()
if(EXISTS ${WORK}/build/lanes_big_integers)
  run(${WORK}/build/lanes_big_integers --test)
  if(NOT out MATCHES "a \\* b\\^3 mod p: 0 wrong")
    message(FATAL_ERROR "lanes_big_integers built against the installed package: ${out}")
  endif()
endif()
message(STATUS "find_package(Safhire) built and ran the examples against ${WORK}/prefix")
