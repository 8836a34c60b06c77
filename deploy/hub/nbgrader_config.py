# nbgrader's settings for every student on the course's hub (make hub-env copies this file into
# .venv-hub/etc/jupyter/, a folder nbgrader reads after the user's own ~/.jupyter): the course and
# the exchange folder, as instructors/README.md's "On JupyterHub, with nbgrader's exchange" has
# them. The instructor creates the exchange folder once, as root, before the first release:
#     mkdir -p /usr/local/share/nbgrader/exchange && chmod 1777 /usr/local/share/nbgrader/exchange
c = get_config()  # noqa: F821  (defined by the config loader)
c.CourseDirectory.course_id = "lessonlib"
c.Exchange.root = "/usr/local/share/nbgrader/exchange"
