-- The extension refuses databases other than search_engine.database
-- (the test instance sets it to contrib_regression).
CREATE EXTENSION search_engine;
SELECT extname, extversion FROM pg_extension WHERE extname = 'search_engine';

-- Results carry volatile values (took, uuids, dates): tests mask them.
CREATE FUNCTION mask(j jsonb) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  k text; v jsonb; r jsonb;
BEGIN
  IF jsonb_typeof(j) = 'object' THEN
    r := '{}';
    FOR k, v IN SELECT * FROM jsonb_each(j) LOOP
      IF k IN ('took', 'uuid', 'index_uuid', 'creation_date') THEN
        r := r || jsonb_build_object(k, '<masked>');
      ELSE
        r := r || jsonb_build_object(k, mask(v));
      END IF;
    END LOOP;
    RETURN r;
  ELSIF jsonb_typeof(j) = 'array' THEN
    RETURN coalesce((SELECT jsonb_agg(mask(e) ORDER BY o) FROM jsonb_array_elements(j) WITH ORDINALITY AS t(e, o)), '[]');
  END IF;
  RETURN j;
END $$;

-- bulk() answers json (ES's text, in ES's key order); masked as jsonb.
CREATE FUNCTION mask(j json) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$ SELECT mask(j::jsonb) $$;

-- SQLSTATE and ES type of a failing statement.
CREATE FUNCTION try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; det text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, det = PG_EXCEPTION_DETAIL;
  RETURN st || ' ' || det;
END $$;

-- Errors show the ES type in DETAIL.
\set VERBOSITY default
\set SHOW_CONTEXT never
