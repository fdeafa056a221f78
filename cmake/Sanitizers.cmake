add_library(goarchive_sanitizers INTERFACE)
if(GOARCHIVE_SANITIZE)
  target_compile_options(goarchive_sanitizers INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                        -fno-sanitize-recover=undefined)
  target_link_options(goarchive_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
