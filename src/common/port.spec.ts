import { Port } from './port.js';

class Greeting extends Port<{ hello(): string }> {
  constructor() {
    super('Greeting (the test)');
  }

  hello(): string {
    return this.target.hello();
  }
}

describe('Port', () => {
  it('should call what was registered', () => {
    const port = new Greeting();
    port.register({ hello: () => 'hi' });
    expect(port.hello()).toBe('hi');
  });

  it('should name the port when nothing was registered (a module is not imported)', () => {
    expect(() => new Greeting().hello()).toThrow(
      'Greeting (the test) is not registered: its module is not imported',
    );
  });
});
