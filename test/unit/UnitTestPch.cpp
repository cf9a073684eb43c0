// The program that builds test/unit/UnitTestPch.h's precompiled header (an
// executable, so that it is compiled with the tests' own flags: -fPIE, the
// unit tests' compile options). It runs no test.
