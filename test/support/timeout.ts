// Integration tests wait on real databases, brokers and apps started per file: on a loaded
// CI machine a hook or test can take longer than Jest's 5 s default without being wrong.
jest.setTimeout(30_000);
