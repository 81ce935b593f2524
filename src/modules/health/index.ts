/** Public face of the health module. */
export { HealthService } from './health-service';
export { healthHandlers, HEALTH_RETRY_AFTER_SECONDS } from './health-handlers';
