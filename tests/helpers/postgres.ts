/** The throwaway PostgreSQL server of the tests, shared with the benchmarks (bench/postgres-server.ts). */
export { POSTGRES_REQUIRED, postgresUnavailable, startPostgres, type PostgresServer } from "../../bench/postgres-server.js";
