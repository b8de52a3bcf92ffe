-- A treedp ledger (format version 1) written by treedp 0.1.0 at main 76db645, before an
-- accountant held one privacy unit: /tmp/units/make_old.py, dumped with sqlite3 iterdump.
-- Datasets: 'ages' (record charges), 'people' (person:pid), 'visits' (person:pid then
-- record: the two units the new check refuses to mix), 'empty' (no charge).
BEGIN TRANSACTION;
CREATE TABLE charges (dataset TEXT NOT NULL, seq INTEGER NOT NULL, time TEXT NOT NULL, mechanism TEXT NOT NULL, measure TEXT NOT NULL, neighbours TEXT NOT NULL, unit TEXT NOT NULL, parameters TEXT NOT NULL, grp TEXT, hash TEXT NOT NULL, PRIMARY KEY (dataset, seq));
INSERT INTO "charges" VALUES('ages',1,'2026-11-27T15:29:12.707494+00:00','tree','{"epsilon": 0.5, "kind": "pure"}','add_remove','record','{"bins": 74}',NULL,'8a2f99f72de3c851e13f285835c816dca46c219097d90f3ec9d449d20c7a9063');
INSERT INTO "charges" VALUES('ages',2,'2026-11-27T15:29:12.727946+00:00','histogram','{"epsilon": 0.25, "kind": "pure"}','add_remove','record','{}',NULL,'41dd19b746ad3dbca158c3cacfdf57dfa8f79414246ae20340eb36579f8ac9b7');
INSERT INTO "charges" VALUES('people',1,'2026-11-27T15:29:12.764284+00:00','grouped_tree','{"kind": "zcdp", "rho": 0.25}','add_remove','person:pid','{"max_contributions": 3}',NULL,'26ac9dd92d7673dbb402a2e894d69ba7755da58ea178235274a643f54f08ca4c');
INSERT INTO "charges" VALUES('visits',1,'2026-11-27T15:29:12.797483+00:00','grouped_tree','{"epsilon": 0.5, "kind": "pure"}','add_remove','person:pid','{"max_contributions": 3}',NULL,'c37113853ec5cb3e2f26fbd4a948efc0110a48a1ae049a3471473f3b70f20747');
INSERT INTO "charges" VALUES('visits',2,'2026-11-27T15:29:12.804056+00:00','quantiles[tree]','{"epsilon": 0.5, "kind": "pure"}','add_remove','record','{}',NULL,'f9b7bf7bf9301663a6522371e3159f6d59a0309ba7686bf1041eb8bc51dfd815');
CREATE TABLE datasets (name TEXT PRIMARY KEY, total TEXT NOT NULL, neighbours TEXT NOT NULL, created TEXT NOT NULL, n_charges INTEGER NOT NULL, head TEXT NOT NULL);
INSERT INTO "datasets" VALUES('ages','{"epsilon": 2.0, "kind": "pure"}','add_remove','2026-11-27T15:29:12.689315+00:00',2,'41dd19b746ad3dbca158c3cacfdf57dfa8f79414246ae20340eb36579f8ac9b7');
INSERT INTO "datasets" VALUES('people','{"kind": "zcdp", "rho": 1.0}','add_remove','2026-11-27T15:29:12.752114+00:00',1,'26ac9dd92d7673dbb402a2e894d69ba7755da58ea178235274a643f54f08ca4c');
INSERT INTO "datasets" VALUES('visits','{"epsilon": 2.0, "kind": "pure"}','add_remove','2026-11-27T15:29:12.787015+00:00',2,'f9b7bf7bf9301663a6522371e3159f6d59a0309ba7686bf1041eb8bc51dfd815');
INSERT INTO "datasets" VALUES('empty','{"epsilon": 1.0, "kind": "pure"}','add_remove','2026-11-27T15:29:12.806896+00:00',0,'0302e2af28f7c5dcd68f62dcb50f3575a21398a91d63804d6c46cb112b813cad');
CREATE TABLE treedp_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "treedp_meta" VALUES('magic','treedp-ledger');
INSERT INTO "treedp_meta" VALUES('version','1');
COMMIT;
