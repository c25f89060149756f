"""The indexing case study's database engines behind one contract (``contract.IndexingEngine``): SQLite
(embedded), PostgreSQL and MongoDB, their query translations (SQL, MQL), and the throwaway PostgreSQL
server that ``wield db`` starts for experiments."""
