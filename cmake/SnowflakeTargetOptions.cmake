# Per-target compile settings, so nothing edits the global CMAKE_CXX_FLAGS.

function(snowflake_target_options target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    $<$<BOOL:${SNOWFLAKE_WERROR}>:-Werror>)
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
