// The translation unit that builds cmake/MlirPch.h's precompiled header.
