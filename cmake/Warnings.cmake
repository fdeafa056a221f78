add_library(goarchive_warnings INTERFACE)
target_compile_options(goarchive_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
# GCC 12 at -O2 and above reports -Wrestrict on std::string concatenation inlined from libstdc++ (GCC bug
# 105329, a false positive: the overlap it names is outside any object). Debug builds keep the warning.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(goarchive_warnings INTERFACE $<$<NOT:$<CONFIG:Debug>>:-Wno-restrict>)
endif()
if(GOARCHIVE_WERROR)
  target_compile_options(goarchive_warnings INTERFACE -Werror)
endif()
