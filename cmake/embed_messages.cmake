# Writes OUT, a C++ fragment holding every message catalogue file given in
# FILES (separated by |) as {name, text} raw string literals, ended by
# {nullptr, nullptr}. Run by hangdx/ingest/CMakeLists.txt at build time, so
# editing a .msgs file rebuilds the catalogue.
string(REPLACE "|" ";" FILES "${FILES}")
set(body "constexpr std::pair<const char*, const char*> kBuiltinMessageFiles[] = {\n")
foreach(f IN LISTS FILES)
  file(READ "${f}" text)
  get_filename_component(name "${f}" NAME)
  string(FIND "${text}" ")hangdx_msgs\"" bad)
  if(NOT bad EQUAL -1)
    message(FATAL_ERROR "${f} holds the raw-string delimiter )hangdx_msgs\"")
  endif()
  string(APPEND body "    {\"${name}\", R\"hangdx_msgs(${text})hangdx_msgs\"},\n")
endforeach()
string(APPEND body "    {nullptr, nullptr},\n};\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
