"""An example evalsite plugin: the ``shout`` target, the ``shouted`` evaluator, the ``tsv`` importer."""
