# Per-target compile settings, so nothing edits the global CMAKE_CXX_FLAGS.

function(snowflake_target_options target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    $<$<BOOL:${SNOWFLAKE_WERROR}>:-Werror>)
  if(SNOWFLAKE_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      message(FATAL_ERROR "SNOWFLAKE_FUZZ needs Clang (libFuzzer): CXX=clang++-14")
    endif()
    # Coverage for libFuzzer in every target; the fuzz targets link the
    # fuzzer's main themselves (tests/fuzz).
    target_compile_options(${target} PUBLIC
      -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(SNOWFLAKE_SANITIZE AND SNOWFLAKE_TSAN)
    message(FATAL_ERROR "SNOWFLAKE_SANITIZE and SNOWFLAKE_TSAN exclude each other: one tree each")
  endif()
  if(SNOWFLAKE_TSAN)
    target_compile_options(${target} PUBLIC -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=thread)
    # Boost.Asio's fenced_block around handler calls uses atomic_thread_fence,
    # which TSan does not model (GCC warns: -Wtsan). The handoff of a handler
    # between threads goes through the scheduler's mutex, which TSan does see.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PUBLIC -Wno-tsan)
    endif()
  endif()
  if(SNOWFLAKE_SANITIZE)
    # PUBLIC so that whatever links the target is instrumented the same way.
    target_compile_options(${target} PUBLIC
      -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
    # GCC 12 reports false "maybe uninitialized" warnings inside libstdc++
    # (std::regex, used by Catch2) once ASan instruments it.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
    endif()
  endif()
endfunction()
