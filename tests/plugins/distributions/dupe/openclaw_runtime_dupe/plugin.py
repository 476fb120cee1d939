"""Never imported: the name conflict is detected first."""
