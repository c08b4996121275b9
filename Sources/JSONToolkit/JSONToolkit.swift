// JSONToolkit: the one JSON reader and writer of orderlive (STYLE 13). A strict byte-level reader
// (RFC 8259, nesting capped), the exact text of members for storing what was received, string
// escaping, and the one reading of "an id is a number or a string". No I/O, no other module.
