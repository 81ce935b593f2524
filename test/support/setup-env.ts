// Tests run with the contract's response validation on and quiet logs.
process.env.NODE_ENV = 'test';
