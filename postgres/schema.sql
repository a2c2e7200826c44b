-- The source table of the reference pipeline (Airbnb hosts), idempotent.
CREATE TABLE IF NOT EXISTS public.hosts_demo (
    id            INT PRIMARY KEY,
    url           TEXT,
    name          TEXT,
    since         DATE,
    location      TEXT,          -- "City, Country"
    response_time TEXT,
    response_rate TEXT
);
-- FULL: deletes carry the whole old row and unchanged TOASTed values can be filled from
-- the old tuple, so the emitter never has to guess a value.
ALTER TABLE public.hosts_demo REPLICA IDENTITY FULL;
