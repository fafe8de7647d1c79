# Man pages and the examples that are compiled as tests of the docs.
