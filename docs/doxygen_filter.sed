# Presents the public headers' plain C comments to Doxygen as documentation
# (docs/Doxyfile's INPUT_FILTER). The headers stay ordinary C.
#
# The first comment of a header documents the file.
1s|^/\* |/** @file\
 * |
# A comment after code on its line documents that field or value.
s|\([;,]\)\([ \t]*\)/\* |\1\2/**< |
# A comment opening a line documents the declaration below it, except
# section rulers ("/* ---- Devices ---- */").
s|^\([ \t]*\)/\* \([^-]\)|\1/** \2|
