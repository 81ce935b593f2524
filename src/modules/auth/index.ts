/** Public face of the auth module for other modules: users and their login identifiers. */
export { UserRepository, type UserStatus } from './user-repository';
export { parseLoginIdentifier, type LoginIdentifier } from './identifier';
