-- Nothing is executable by PUBLIC; read < write < admin roles.
CREATE ROLE se_nobody LOGIN;
CREATE ROLE se_reader LOGIN IN ROLE search_engine_read;
CREATE ROLE se_writer LOGIN IN ROLE search_engine_write;
SET ROLE se_nobody;
SELECT search_engine.search('products');
SELECT * FROM search_engine.indices;
RESET ROLE;
SET ROLE se_reader;
SELECT search_engine.count('products') > 0 AS can_read;
SELECT search_engine.index_doc('products', 'r1', '{"name": "x"}');
RESET ROLE;
SET ROLE se_writer;
SELECT search_engine.index_doc('products', 'w1', '{"name": "written"}')->>'result';
SELECT search_engine.create_index('writer_index');
SELECT status FROM search_engine.request('GET', '/');
RESET ROLE;
SELECT has_function_privilege('search_engine_admin', 'search_engine.request(text,text,text)', 'EXECUTE') AS admin_rest,
       has_function_privilege('public', 'search_engine.search(text,jsonb,text)', 'EXECUTE') AS public_search;
DROP ROLE se_nobody; DROP ROLE se_reader; DROP ROLE se_writer;
