/** Public face of the organisations module: import from here. */
export { OrganizationRepository, type OrganizationProfile } from './organization-repository';
